"""fixrl sandbox build-image | cleanup."""
from __future__ import annotations

from fixrl.sandbox import DEFAULT_IMAGE
from fixrl.sandbox.image import build_image as build
from fixrl.sandbox.image import verify_image


def register(sub) -> None:
    p = sub.add_parser("sandbox", help="sandbox images and containers")
    ssub = p.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)

    b = ssub.add_parser("build-image", help="build the base image from Debian packages "
                        "(debootstrap + docker import); skipped when the tag exists")
    b.add_argument("--tag", default=None, help="image tag (default: fixrl-sandbox:base)")
    b.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    b.add_argument("--mirror", default=None, help="Debian mirror URL for debootstrap")
    b.set_defaults(func=build_image)

    c = ssub.add_parser("cleanup", help="remove every container fixrl started (label fixrl=1)")
    c.add_argument("--session", default=None,
                   help="only the containers of this session (label fixrl.session=SESSION)")
    c.set_defaults(func=cleanup)


def build_image(args) -> int:
    tag = args.tag or DEFAULT_IMAGE
    built = build(tag, force=args.force, mirror=args.mirror)
    version = verify_image(tag)
    print(f"{tag}: {'built' if built else 'already present'} ({version.replace(chr(10), ', ')})")
    return 0


def cleanup(args) -> int:
    from fixrl.sandbox.docker import cleanup as remove_all  # noqa: PLC0415 - the docker SDK, only for this command

    n = remove_all(session=args.session)
    print(f"removed {n} fixrl container(s)")
    return 0
