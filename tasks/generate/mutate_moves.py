"""The mutation moves and the text they change: each move rewrites one site in a private copy
of the tree, and the source text is spliced to match, only the mutated span changed, then
proven to parse to exactly the mutated tree."""
from __future__ import annotations

import ast
import copy
import functools
import io
import re
import tokenize

from fixrl.tasks.generate.mutate_sites import ARITH, FLIP, bodies, bump, init_value, obo_mutate, obo_repair, op_symbol

# ---------------------------------------------------------------------------------------------
# Text splicing: change only the mutated span, then prove the text means the mutated tree

_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+\Z", re.S)


def split_lines(source: str) -> list[str]:
    return _LINE.findall(source)


def text_index(lines: list[str], lineno: int, col: int) -> int:
    """String index of (1-based line, UTF-8 byte column), as ast reports positions."""
    before = sum(len(line) for line in lines[: lineno - 1])
    return before + len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8", "replace"))


def same_tree(tree: ast.AST, text: str) -> bool:
    if isinstance(tree, MutatedTree):
        return tree.matches(text)
    try:
        return same_node(ast.parse(text), tree)
    except SyntaxError:
        return False


def same_node(a: object, b: object) -> bool:
    """Whether two trees are equal field by field, as `ast.dump(a) == ast.dump(b)` says (positions
    aside; a constant equal only across types, 1 and True, differs), without writing either out:
    the dumps of a large function cost more than everything else a mutant needs."""
    if isinstance(a, ast.AST):
        if type(a) is not type(b):
            return False
        # a missing field reads as None: ast.dump leaves out both alike
        return all(same_node(getattr(a, f, None), getattr(b, f, None)) for f in a._fields)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_node(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a is b or repr(a) == repr(b))


def copy_node(node: ast.AST, memo: dict[int, ast.AST]) -> ast.AST:
    """A deep copy of an AST (`copy.deepcopy`'s result, several times faster); `memo` maps each
    original node's id to its copy, so a site found in the original is found in the copy
    without walking it again. Field values that are not nodes or lists are immutable: shared."""
    done = memo.get(id(node))
    if done is not None:
        return done  # the parser shares operator and context singletons: one copy each, as deepcopy
    new = type(node).__new__(type(node))
    memo[id(node)] = new
    for key, value in node.__dict__.items():
        if isinstance(value, ast.AST):
            value = copy_node(value, memo)
        elif isinstance(value, list):
            value = [copy_node(v, memo) if isinstance(v, ast.AST) else v for v in value]
        new.__dict__[key] = value
    return new


@functools.lru_cache(maxsize=8)
def parse_shared(source: str) -> ast.Module:
    """The source's tree, parsed once for all its mutants: shared, so never changed (moves
    work on `copy_along`'s copies)."""
    return ast.parse(source)


def copy_along(tree: ast.Module, fn: ast.AST,
               memo: dict[int, ast.AST] | None = None) -> tuple[ast.Module, ast.AST, int]:
    """A copy of `tree` in which only `fn` (deeply) and the module and classes holding it
    (shallowly) are new: (the copy, fn's copy, the index of the top-level statement holding it).
    Copying the whole module per mutant cost more than everything else the mutants need.
    `memo` (given) receives original node id -> copy for every node of `fn`."""

    def path(body: list[ast.stmt]) -> list[int] | None:
        for i, node in enumerate(body):
            if node is fn:
                return [i]
            if isinstance(node, ast.ClassDef):
                rest = path(node.body)
                if rest is not None:
                    return [i, *rest]
        return None

    steps = path(tree.body)
    if steps is None:
        raise ValueError("function not found in its module")
    new_tree = copy.copy(tree)
    holder: ast.AST = new_tree
    new_tree.body = list(tree.body)
    for i in steps[:-1]:
        cls = copy.copy(holder.body[i])  # type: ignore[attr-defined]
        cls.body = list(cls.body)
        holder.body[i] = cls  # type: ignore[attr-defined]
        holder = cls
    new_fn = copy_node(fn, {} if memo is None else memo)
    holder.body[steps[-1]] = new_fn  # type: ignore[attr-defined]
    return new_tree, new_fn, steps[0]


class MutatedTree:
    """A mutated module tree (`tree`) and a fast test that a text means it. The mutant texts
    differ from the source only inside the top-level statement that holds the function; when
    a text keeps the source's lines before and after that statement, those lines parse as before,
    so only the statement's own lines are parsed and compared. Any other text gets the full
    comparison."""

    def __init__(self, source: str, tree: ast.Module, new_tree: ast.Module, top: int) -> None:
        self.tree = new_tree
        stmt = tree.body[top]
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        lines = split_lines(source)
        self.head = "".join(lines[: first - 1])
        self.tail = "".join(lines[stmt.end_lineno:])  # type: ignore[misc]
        self.top = top

    def matches(self, text: str) -> bool:
        """Whether `text` parses to `tree` (as it is now: the move has changed it since __init__)."""
        h, t = len(self.head), len(self.tail)
        if len(text) >= h + t and text.startswith(self.head) and text.endswith(self.tail):
            try:
                region = ast.parse(text[h:len(text) - t])
            except SyntaxError:
                region = None
            if region is not None and len(region.body) == 1 and same_node(region.body[0], self.tree.body[self.top]):
                return True
        return same_tree(self.tree, text)


@functools.lru_cache(maxsize=8)
def _prefers_double(source: str) -> bool:
    """Whether the file writes its one-line string literals with double quotes more often than
    with single ones (f-strings and triple-quoted strings, docstrings among them, aside)."""
    single = double = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type != tokenize.STRING:
                continue
            prefix = re.match(r"[A-Za-z]*", tok.string).group(0).lower()  # type: ignore[union-attr]
            body = tok.string[len(prefix):]
            if "f" in prefix or body[:3] in ('"""', "'''"):
                continue
            double += body[0] == '"'
            single += body[0] == "'"
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return False
    return double > single


def unparse_like(node: ast.AST, source: str) -> str:
    """`ast.unparse(node)` with its one-line string literals in the quotes `source` mostly uses:
    ast.unparse writes single quotes, and a mutated line in a double-quoted file would otherwise
    show where the bug is (and, once fixed by hand, tell the fix apart by its style). A literal
    keeps its quotes when the other quote is in its text (its escapes would change)."""
    code = ast.unparse(node)
    if not _prefers_double(source) or "'" not in code:
        return code
    lines = split_lines(code)
    edits = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type != tokenize.STRING:
                continue
            prefix = re.match(r"[A-Za-z]*", tok.string).group(0)  # type: ignore[union-attr]
            body = tok.string[len(prefix):]
            if "f" in prefix.lower() or body[:3] == "'''" or not body.startswith("'") or '"' in body:
                continue
            start = sum(len(line) for line in lines[: tok.start[0] - 1]) + tok.start[1]  # tokenize counts characters
            edits.append((start, start + len(tok.string), f'{prefix}"{body[1:-1]}"'))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return code
    for start, end, text in reversed(edits):
        code = code[:start] + text + code[end:]
    return code


def splice_expr(source: str, old: ast.AST, new: ast.AST, tree: ast.AST) -> str | None:
    lines = split_lines(source)
    start = text_index(lines, old.lineno, old.col_offset)  # type: ignore[attr-defined]
    end = text_index(lines, old.end_lineno, old.end_col_offset)  # type: ignore[attr-defined]
    code = unparse_like(new, source)
    for text in (code, f"({code})"):
        candidate = source[:start] + text + source[end:]
        if same_tree(tree, candidate):
            return candidate
    return None


def splice_function(source: str, fn_old: ast.AST, fn_new: ast.AST, tree: ast.AST) -> str | None:
    """Fallback: rewrite the whole function with ast.unparse (loses its comments)."""
    lines = split_lines(source)
    first = min([fn_old.lineno] + [d.lineno for d in fn_old.decorator_list])  # type: ignore[attr-defined]
    indent = re.match(r"[ \t]*", lines[first - 1]).group(0)  # type: ignore[union-attr]
    newline = "\n"
    body = "".join(indent + line + newline if line else newline for line in unparse_like(fn_new, source).split("\n"))
    candidate = "".join(lines[: first - 1]) + body + "".join(lines[fn_old.end_lineno:])  # type: ignore[attr-defined]
    return candidate if same_tree(tree, candidate) else None


def _alone_on_lines(lines: list[str], node: ast.stmt) -> bool:
    head = lines[node.lineno - 1].encode("utf-8")[: node.col_offset].decode("utf-8", "replace")
    tail = lines[node.end_lineno - 1].encode("utf-8")[node.end_col_offset:].decode("utf-8", "replace")  # type: ignore[operator]
    return head.strip() == "" and (tail.strip() == "" or tail.strip().startswith("#"))


# ---------------------------------------------------------------------------------------------
# The moves. A move gets (node in a private copy of the tree, its parent) and changes the copy.
# Expression moves return the replacement expression; statement moves edit the parent's body
# and return a text edit `lines -> lines` that does the same to the source.


def _set_op(node: ast.AST, table: dict) -> ast.AST:
    node.op = table[type(node.op)]()  # type: ignore[attr-defined]
    return node


def _gap_edit(source: str, left: ast.AST, right: ast.AST, old: str, new: str, fallback: ast.AST, orig: ast.AST):
    """Rewrite only the operator between two operands (parentheses, spacing and comments kept);
    if the gap holds anything unexpected, fall back to re-writing the whole expression."""

    def edit(lines: list[str]) -> list[str] | None:
        text = "".join(lines)
        start = text_index(lines, left.end_lineno, left.end_col_offset)  # type: ignore[attr-defined]
        end = text_index(lines, right.lineno, right.col_offset)  # type: ignore[attr-defined]
        gap = text[start:end]
        pattern = r"\b" + re.escape(old).replace(r"\ ", r"\s+") + r"\b" if old[0].isalpha() \
            else r"(?<![<>=!*/%+\-])" + re.escape(old) + r"(?![<>=*/])"
        code = gap.split("#", 1)[0] if "\n" not in gap else gap
        if len(re.findall(pattern, code)) != 1:
            return split_lines(_splice_expr_text(text, orig, fallback))
        gap = re.sub(pattern, new, gap, count=1)
        return split_lines(text[:start] + gap + text[end:])

    edit.node = fallback  # type: ignore[attr-defined]
    return edit


def _splice_expr_text(source: str, old: ast.AST, new: ast.AST) -> str:
    lines = split_lines(source)
    start = text_index(lines, old.lineno, old.col_offset)  # type: ignore[attr-defined]
    end = text_index(lines, old.end_lineno, old.end_col_offset)  # type: ignore[attr-defined]
    return source[:start] + unparse_like(new, source) + source[end:]


def move_flip(site, parent, fn, source):
    node, i = site
    old = op_symbol(node.ops[i])
    node.ops[i] = FLIP[type(node.ops[i])]()
    left = node.left if i == 0 else node.comparators[i - 1]
    return _gap_edit(source, left, node.comparators[i], old, op_symbol(node.ops[i]), node, node)


def move_minmax(node, parent, fn, source):
    node.func.id = "max" if node.func.id == "min" else "min"
    return node


def move_arith(node, parent, fn, source):
    old = op_symbol(node.op)
    _set_op(node, ARITH)
    if isinstance(node, ast.AugAssign):
        return _gap_edit(source, node.target, node.value, old + "=", op_symbol(node.op) + "=", node, node)
    return _gap_edit(source, node.left, node.right, old, op_symbol(node.op), node, node)


def move_bool(node, parent, fn, source):
    old = op_symbol(node.op)
    node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    edits = [(a, b) for a, b in zip(node.values, node.values[1:])]

    def edit(lines: list[str]) -> list[str] | None:
        # Every `and` of the BoolOp becomes `or` (one BoolOp is one operator); last gap first.
        for a, b in reversed(edits):
            lines = _gap_edit("".join(lines), a, b, old, op_symbol(node.op), node, node)(lines)
            if lines is None:
                return None
        return lines

    edit.node = node  # type: ignore[attr-defined]
    return edit


def move_drop_not(node, parent, fn, source):
    return node.operand


def move_add_not(node, parent, fn, source):
    return ast.UnaryOp(ast.Not(), node)


def move_init(node, parent, fn, source):
    return init_value(node)


def move_swap(site, parent, fn, source):
    node, i = site
    node.args[i], node.args[i + 1] = node.args[i + 1], node.args[i]
    return node


def move_obo(site, parent, fn, source):
    return obo_mutate(*site)


def move_obo_repair(site, parent, fn, source):
    return obo_repair(*site)


def move_const(node, parent, fn, source):
    return bump(node, +1)


def move_const_repair(node, parent, fn, source):
    return bump(node, -1)


def _reindent(block: list[str], old: str, new: str) -> list[str] | None:
    out = []
    for line in block:
        if line.strip() == "":
            out.append(line)
        elif line.startswith(old):
            out.append(new + line[len(old):])
        else:
            return None
    return out


def _indent_of(lines: list[str], lineno: int) -> str:
    return re.match(r"[ \t]*", lines[lineno - 1]).group(0)  # type: ignore[union-attr]


def move_early(node, parent, fn, source):
    """Move the `return` that follows a loop to the end of the loop's body."""
    body = next(b for b in bodies(fn) if any(s is node for s in b))
    i = next(k for k, s in enumerate(body) if s is node)
    loop = body[i - 1]
    del body[i]
    loop.body.append(node)
    ret_lines = (node.lineno, node.end_lineno)
    loop_end, body_line = loop.end_lineno, loop.body[0].lineno

    def edit(lines: list[str]) -> list[str] | None:
        if not _alone_on_lines(lines, node):
            return None
        block = lines[ret_lines[0] - 1: ret_lines[1]]
        moved = _reindent(block, _indent_of(lines, ret_lines[0]), _indent_of(lines, body_line))
        if moved is None:
            return None
        rest = lines[: ret_lines[0] - 1] + lines[ret_lines[1]:]
        return rest[:loop_end] + moved + rest[loop_end:]

    return edit


def move_early_repair(loop, parent, fn, source):
    """Move the `return` that ends a loop's body to just after the loop."""
    body = next(b for b in bodies(fn) if any(s is loop for s in b))
    i = next(k for k, s in enumerate(body) if s is loop)
    ret = loop.body.pop()
    body.insert(i + 1, ret)
    ret_lines, loop_line = (ret.lineno, ret.end_lineno), loop.lineno

    def edit(lines: list[str]) -> list[str] | None:
        if not _alone_on_lines(lines, ret):
            return None
        block = lines[ret_lines[0] - 1: ret_lines[1]]
        moved = _reindent(block, _indent_of(lines, ret_lines[0]), _indent_of(lines, loop_line))
        if moved is None:
            return None
        rest = lines[: ret_lines[0] - 1] + lines[ret_lines[1]:]
        at = ret_lines[0] - 1  # the loop now ends just before where the return was
        return rest[:at] + moved + rest[at:]

    return edit


def move_drop_guard(node, parent, fn, source):
    body = next(b for b in bodies(fn) if any(s is node for s in b))
    body.remove(node)
    span = (node.lineno, node.end_lineno)

    def edit(lines: list[str]) -> list[str] | None:
        if not _alone_on_lines(lines, node):
            return None
        return lines[: span[0] - 1] + lines[span[1]:]

    return edit
