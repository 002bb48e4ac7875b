"""The glibc floor of a built package: `python packaging/check_bundle.py dist/triton-viewer`.

Reads every ELF file in the folder and reports the highest GLIBC symbol version any of them
needs (the oldest glibc the package runs on), the highest GLIBCXX (the oldest libstdc++, which
comes from the host), and the libraries expected from the host. Exits 1 when a file needs a
glibc newer than the floor (--glibc-floor, default 2.35: what the bundled tritonserver's own
libraries need), naming those files: a library taken from a newer build machine raised it.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from elf_info import ElfInfo, elf_files, read_all, version_key, version_text

DEFAULT_GLIBC_FLOOR = "2.35"
# Parts of glibc itself: always the host's.
GLIBC_LIBRARIES = {
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "libresolv.so.2",
    "libmvec.so.1",
    "libanl.so.1",
}


def _short(path: Path, root: Path) -> str:
    return str(path.relative_to(root))


def _highest(infos: list[ElfInfo], family: str) -> tuple[tuple[int, ...] | None, list[ElfInfo]]:
    keys = [i.highest[family] for i in infos if family in i.highest]
    if not keys:
        return None, []
    top = max(keys)
    return top, [i for i in infos if i.highest.get(family) == top]


def host_libraries(infos: list[ElfInfo], root: Path) -> dict[str, list[str]]:
    """Needed sonames found nowhere in the folder (glibc's own left out): soname -> users."""
    present = {p.name for p in root.rglob("*")}
    users: dict[str, list[str]] = defaultdict(list)
    for info in infos:
        for soname in info.needed:
            if soname not in present and soname not in GLIBC_LIBRARIES and not soname.startswith("ld-linux"):
                users[soname].append(_short(info.path, root))
    return dict(sorted(users.items()))


def check(root: Path, floor: str, verbose: bool = False) -> int:
    infos = read_all(elf_files(root))
    print(f"bundle check: {len(infos)} ELF files in {root}")
    glibc, at_glibc = _highest(infos, "GLIBC")
    floor_key = version_key(floor)
    status = 0
    if glibc is None:
        print("bundle check: no file needs a GLIBC symbol version")
    else:
        names = ", ".join(_short(i.path, root) for i in at_glibc[:4]) + (" ..." if len(at_glibc) > 4 else "")
        print(f"bundle check: highest GLIBC version needed: {version_text(glibc)} ({names}); floor {floor}")
        above = sorted((i for i in infos if i.highest.get("GLIBC", (0,)) > floor_key), key=lambda i: i.path)
        if above:
            status = 1
            for info in above:
                need = version_text(info.highest["GLIBC"])
                print(
                    f"bundle check: FAIL {_short(info.path, root)} needs GLIBC_{need} > {floor}",
                    file=sys.stderr,
                )
            print(
                f"bundle check: FAILED: {len(above)} file(s) need a glibc newer than {floor} "
                "(leave such libraries to the host, or take them from an older build)",
                file=sys.stderr,
            )
    glibcxx, at_glibcxx = _highest(infos, "GLIBCXX")
    if glibcxx is not None:
        names = ", ".join(_short(i.path, root) for i in at_glibcxx[:2]) + (
            " ..." if len(at_glibcxx) > 2 else ""
        )
        print(
            f"bundle check: highest GLIBCXX version needed (the host's libstdc++): "
            f"{version_text(glibcxx)} ({names})"
        )
    host = host_libraries(infos, root)
    print(f"bundle check: libraries expected from the host: {' '.join(host)}")
    if verbose:
        for soname, users in host.items():
            print(f"  {soname} <- {', '.join(users[:3])}{' ...' if len(users) > 3 else ''}")
    if status == 0:
        print(f"bundle check: OK (glibc floor {floor})")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the built package folder (dist/triton-viewer)")
    parser.add_argument(
        "--glibc-floor",
        default=DEFAULT_GLIBC_FLOOR,
        help=f"fail when any file needs a newer glibc (default {DEFAULT_GLIBC_FLOOR})",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="list which files need each host library"
    )
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"bundle check: {args.folder} is not a folder", file=sys.stderr)
        return 2
    return check(args.folder, args.glibc_floor, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
