"""One way to turn a job's config dataclass into command-line flags, and the flags back into it.

    add_config_flags(parser, GRPOConfig, aliases={"max_steps": ["--steps"]})
    fields = given_fields(args, GRPOConfig)     # {"max_steps": 3, "env.max_turns": 4, ...}

Every field becomes `--field-name` (nested dataclass fields too, without their prefix, unless
two collide), with the type, choices and help taken from the field's annotation and docstring.
Each flag's default is None, meaning "not given": the config's own default (or a preset's)
stands, so a help text never restates a default that could drift from the code. Booleans get
`--x / --no-x`. `parse_set("env.max_turns=4", GRPOConfig)` parses the `--set FIELD=VALUE`
form, for fields that have no flag of their own (dicts) or for dotted names.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import textwrap
import types
import typing
from typing import Any, Literal

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Field name -> its docstring (the string literal under the field), for a dataclass and
    its bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, nxt in zip(body, body[1:]):
            doc = nxt.value.value if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) else None
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(doc, str):
                docs[node.target.id] = " ".join(doc.split())
    return docs


@dataclasses.dataclass(frozen=True)
class _Field:
    dotted: str
    """`max_steps`, `env.max_turns`."""
    hint: Any
    doc: str
    flag: str | None = None
    """The field's own flag name (its `metadata["flag"]`: `ray` for `cluster.address`), else None."""


def config_fields(cls: type, prefix: str = "") -> list[_Field]:
    """Every leaf field of a config dataclass, nested dataclasses expanded (dotted names)."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    out: list[_Field] = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            out += config_fields(hint, f"{prefix}{f.name}.")
        else:
            out.append(_Field(prefix + f.name, hint, docs.get(f.name, ""), f.metadata.get("flag")))
    return out


def _options(hint: Any) -> tuple[Any, ...]:
    """The types a hint allows, None left out (`int | None` -> (int,))."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(hint) if a is not type(None))
    return (hint,)


def _literal_values(hint: Any) -> tuple[Any, ...] | None:
    values: list[Any] = []
    for opt in _options(hint):
        if typing.get_origin(opt) is Literal:
            values += typing.get_args(opt)
        elif opt is not str and not callable(opt):
            return None
    return tuple(values) or None


def parse_value(hint: Any, raw: str, where: str) -> Any:
    """A command-line string as a value of `hint`; ValueError naming `where` when it is not."""
    text = raw.strip()
    opts = _options(hint)
    if text.lower() in ("none", "null") and len(opts) < len(typing.get_args(hint) or (hint,)):
        return None
    for opt in opts:
        origin = typing.get_origin(opt)
        if opt is bool:
            if text.lower() not in _TRUE + _FALSE:
                raise ValueError(f"{where}: expected true or false, got {raw!r}")
            return text.lower() in _TRUE
        if opt in (int, float):
            try:
                return opt(text)
            except ValueError:
                kind = "an integer" if opt is int else "a number"
                raise ValueError(f"{where}: expected {kind}, got {raw!r}") from None
        if origin in (list, tuple) and ("," in text or str not in opts):
            item = (typing.get_args(opt) or (str,))[0]
            values = [parse_value(item, x, where) for x in text.split(",") if x.strip()]
            return tuple(values) if origin is tuple else values
    values = _literal_values(hint)
    free = any(o is str or callable(o) for o in opts if typing.get_origin(o) is not Literal)  # any text will do
    if values is not None and text not in values and not free:
        raise ValueError(f"{where}: {raw!r} is not one of {', '.join(map(str, values))}")
    return text


def _is_list(hint: Any) -> bool:
    opts = _options(hint)
    return all(typing.get_origin(o) in (list, tuple) for o in opts)


def _is_flaggable(hint: Any) -> bool:
    return not any(typing.get_origin(o) is dict or o is dict for o in _options(hint))


def add_config_flags(parser: argparse.ArgumentParser, cls: type, *, skip: tuple[str, ...] = (),
                     aliases: dict[str, list[str]] | None = None, title: str | None = None,
                     required: tuple[str, ...] = ()) -> None:
    """A flag per leaf field of `cls` (see the module docstring); `skip` dotted names; `aliases`
    extra flag spellings per dotted name (earlier names stay accepted); `required` fields must
    be given."""
    group = parser.add_argument_group(title) if title else parser
    leaves = [f for f in config_fields(cls) if f.dotted not in skip and _is_flaggable(f.hint)]
    short = [f.flag or f.dotted.rsplit(".", 1)[-1] for f in leaves]
    for f, name in zip(leaves, short):
        flag = "--" + (name if short.count(name) == 1 else f.dotted.replace(".", "-")).replace("_", "-")
        flags = [flag, *(aliases or {}).get(f.dotted, [])]
        kw: dict[str, Any] = dict(dest=f.dotted, default=None, help=_help(f))
        if bool in _options(f.hint) and len(_options(f.hint)) == 1:
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = functools.partial(_argtype, f.hint, flag)
            kw["metavar"] = _metavar(f.hint)
            kw["required"] = f.dotted in required
            if _is_list(f.hint):  # `--task a,b` and `--task a --task b` alike
                kw["action"] = "extend"
        group.add_argument(*flags, **kw)


def _argtype(hint: Any, flag: str, raw: str) -> Any:
    try:
        return parse_value(hint, raw, "value")  # argparse says which argument
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _metavar(hint: Any) -> str:
    values = _literal_values(hint)
    if values and all(isinstance(v, str) for v in values):
        return "{" + ",".join(values) + "}"
    for opt in _options(hint):
        if opt is int:
            return "N"
        if opt is float:
            return "X"
        if typing.get_origin(opt) is list:
            return "A,B,..."
    return "TEXT"


def _help(f: _Field) -> str:
    # argparse %-formats help strings
    return (f.doc or f.dotted).replace("%", "%%")


def given_fields(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """Dotted field name -> value, for every flag of `cls` the user gave."""
    return {f.dotted: getattr(args, f.dotted) for f in config_fields(cls)
            if getattr(args, f.dotted, None) is not None}


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """{"env.max_turns": 4, "seed": 1} -> {"env": {"max_turns": 4}, "seed": 1}."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def merged(config: Any, values: dict[str, Any]) -> Any:
    """`config` (a dataclass instance) with nested `values` (as `nest` gives them) set over it;
    nested dataclasses are merged field by field, not replaced."""
    kw = {}
    for name, value in values.items():
        current = getattr(config, name)
        kw[name] = merged(current, value) if dataclasses.is_dataclass(current) and isinstance(value, dict) else value
    return dataclasses.replace(config, **kw)


def config_from_flags(args: argparse.Namespace, cls: type) -> Any:
    """`cls()` with every flag of it the user gave."""
    return merged(cls(), nest(given_fields(args, cls)))


def parse_set(text: str, cls: type, renames: dict[str, str] | None = None) -> tuple[str, Any]:
    """`FIELD=VALUE` (FIELD dotted, or a leaf name that is unique, or an earlier name in
    `renames`) -> (dotted name, value parsed as the field's type)."""
    name, sep, raw = text.partition("=")
    name = (renames or {}).get(name.strip(), name.strip())
    fields = {f.dotted: f for f in config_fields(cls)}
    by_leaf: dict[str, list[str]] = {}
    for d, f in fields.items():
        by_leaf.setdefault(d.rsplit(".", 1)[-1], []).append(d)
        if f.flag:   # a field with a flag of its own is also known by it (`ray` for `cluster.address`)
            by_leaf.setdefault(f.flag.replace("-", "_"), []).append(d)
    if name not in fields and len(by_leaf.get(name, [])) == 1:
        name = by_leaf[name][0]
    if not sep or name not in fields:
        raise ValueError(f"--set {text!r}: expected FIELD=VALUE with FIELD one of the {cls.__name__} fields "
                         f"({', '.join(sorted(fields))})")
    hint = fields[name].hint
    if typing.get_origin(hint) is dict or hint is dict:
        raise ValueError(f"--set {text!r}: {name} is a mapping; set it in a config file")
    return name, parse_value(hint, raw, f"--set {name}")
