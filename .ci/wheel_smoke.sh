#!/usr/bin/env bash
# The release wheel in a fresh venv: builds the abi3 wheel with maturin (the release profile,
# in Cargo's shared target dir, with the interpreter path `pip install .` gives maturin, so an
# earlier `pip install .` leaves little to rebuild), checks that it holds every tracked file of
# python/ddflow and the declared metadata, installs it with only its declared runtime
# dependencies from PyPI into a venv without system site packages, and runs the BFS example,
# a capture of nulls / dates / decimals, the examples gallery and `python -m ddflow.doctor`
# there, checking that pandas is neither installed nor imported. Any failure exits non-zero.
#
# Usage: .ci/wheel_smoke.sh [WORKDIR]   (default: a temporary directory, removed at the end)
# With DDFLOW_WHEEL=path, that wheel is checked instead of a new build (.ci/run passes the
# wheel it built and installed).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
start=$SECONDS

if [[ $# -ge 1 ]]; then
  WORK=$1
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d -t ddflow-wheel-smoke.XXXXXX)
  trap 'rm -rf "$WORK"' EXIT
fi
rm -rf "$WORK/wheels" "$WORK/venv"

PYTHON=$(python -c 'import os, sys; print(os.path.realpath(sys.executable))')
VERSION=$(python - <<'EOF'
import tomllib
with open("Cargo.toml", "rb") as f:
    print(tomllib.load(f)["workspace"]["package"]["version"])
EOF
)

if [[ -n "${DDFLOW_WHEEL:-}" ]]; then
  echo "== wheel: $DDFLOW_WHEEL (built by the caller), version $VERSION"
  mkdir -p "$WORK/wheels"
  cp "$DDFLOW_WHEEL" "$WORK/wheels/"
else
  echo "== wheel: maturin build --release (abi3), version $VERSION"
  maturin build --release -i "$PYTHON" --out "$WORK/wheels" 2>&1 | grep -vE '^\s+Compiling ' || {
    echo "wheel_smoke: maturin build failed" >&2
    exit 1
  }
fi
shopt -s nullglob
wheels=("$WORK"/wheels/ddflow-"$VERSION"-cp311-abi3-*.whl)
if [[ ${#wheels[@]} -ne 1 ]]; then
  echo "wheel_smoke: expected one abi3 wheel of ddflow $VERSION, got: $(ls "$WORK/wheels")" >&2
  exit 1
fi
WHEEL=${wheels[0]}
echo "built $(basename "$WHEEL") ($(du -h "$WHEEL" | cut -f1)) at +$((SECONDS - start)) s"

echo "== wheel contents: every tracked file of python/ddflow, the native module, the license"
git ls-files python/ddflow >"$WORK/tracked.txt"
python - "$WHEEL" "$WORK/tracked.txt" <<'EOF'
import sys
import zipfile

wheel, tracked = sys.argv[1], sys.argv[2]
names = set(zipfile.ZipFile(wheel).namelist())
want = {line.strip().removeprefix("python/") for line in open(tracked) if line.strip()}
# The native module comes from the build, never from the work tree.
want = {n for n in want if not n.startswith("ddflow/_core.")}
want |= {"ddflow/_core.abi3.so", "ddflow/py.typed", "ddflow/_core.pyi"}
missing = sorted(want - names)
if missing:
    sys.exit("wheel_smoke: the wheel misses " + ", ".join(missing))
if not any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith("/LICENSE") for n in names):
    sys.exit("wheel_smoke: the wheel has no LICENSE file")
print(f"{len(want)} files present ({len(names)} in the wheel)")
EOF

echo "== fresh venv (no system site packages): the wheel and its declared dependencies"
python -m venv "$WORK/venv"
VPY=$WORK/venv/bin/python
"$VPY" -c 'import sys; assert sys.prefix != sys.base_prefix, "not a venv"'
grep -qx 'include-system-site-packages = false' "$WORK/venv/pyvenv.cfg" || {
  echo "wheel_smoke: the venv sees the system site packages" >&2
  exit 1
}
"$VPY" -m pip install -q --disable-pip-version-check "$WHEEL"
"$VPY" -m pip list --disable-pip-version-check --format=freeze | sort | tee "$WORK/installed.txt"
if grep -qiE '^(pandas|pyspark|polars)==' "$WORK/installed.txt"; then
  echo "wheel_smoke: a runtime install pulled in an optional dependency (above)" >&2
  exit 1
fi
echo "installed at +$((SECONDS - start)) s"

echo "== metadata (pip show, importlib.metadata)"
"$VPY" -m pip show --disable-pip-version-check ddflow
(cd "$WORK" && "$VPY" - "$VERSION" <<'EOF'
import importlib.metadata as md
import re
import sys

meta = md.metadata("ddflow")
version = sys.argv[1]
problems = []


def expect(what: str, got: object, want: object) -> None:
    if got != want:
        problems.append(f"{what}: {got!r}, expected {want!r}")


expect("Version", meta["Version"], version)
expect("License", meta["License"], "MIT")
expect("Requires-Python", meta["Requires-Python"], ">=3.11")
extras = set(meta.get_all("Provides-Extra") or [])
if "spark" not in extras:
    problems.append(f"Provides-Extra: {sorted(extras)}, expected 'spark' among them")
requires = md.requires("ddflow") or []
by_extra: dict[str, list[str]] = {}
for req in requires:
    name = re.match(r"[A-Za-z0-9_.-]+", req)
    extra = re.search(r"extra\s*==\s*['\"]([\w-]+)['\"]", req)
    by_extra.setdefault(extra.group(1) if extra else "", []).append(name.group(0) if name else req)
expect("runtime Requires-Dist", sorted(by_extra.get("", [])), ["numpy", "pyarrow"])
expect("the spark extra", sorted(by_extra.get("spark", [])), ["pandas", "pyspark"])
if problems:
    sys.exit("wheel_smoke: metadata: " + "; ".join(problems))
print(f"metadata ok: ddflow {version}, MIT, >=3.11, extras {sorted(extras)}")
EOF
)

echo "== smoke: the BFS example"
(cd "$WORK" && "$VPY" -m ddflow.examples.bfs 200 400 100 1000)

echo "== smoke: nulls, a date and a decimal through a capture; no pandas imported"
(cd "$WORK" && "$VPY" - <<'EOF'
import datetime
import sys
from decimal import Decimal

import pyarrow as pa

import ddflow as dd

assert "/venv/" in dd.__file__, f"ddflow imported from {dd.__file__}, not the venv"
schema = pa.schema([("k", pa.int64()), ("d", pa.date32()), ("p", pa.decimal128(10, 2))])
flow = dd.Dataflow()
rows_in, rows = flow.new_input(schema)
out = (
    rows.with_columns(year=dd.col("d").dt.year())
    .group_by("k")
    .agg(total=dd.sum("p"), n=dd.count(), years=dd.count_distinct("year"))
    .capture()
)
rows_in.update_batch(
    pa.table(
        {
            "k": [1, 1, 2, None],
            "d": [datetime.date(2024, 2, 29), None, datetime.date(1999, 12, 31), None],
            "p": [Decimal("1.10"), Decimal("2.25"), None, Decimal("-0.05")],
        },
        schema=schema,
    ),
    times=0,
)
rows_in.update_at((1, datetime.date(2025, 1, 1), Decimal("0.65")), time=1)
rows_in.advance_to(2)
flow.run_until(2)
got = sorted(out.at(1).to_pylist(), key=lambda r: (r["k"] is None, r["k"] or 0))
want = [
    {"k": 1, "total": Decimal("4.00"), "n": 3, "years": 2, "diff": 1},
    {"k": 2, "total": None, "n": 1, "years": 1, "diff": 1},
    {"k": None, "total": Decimal("-0.05"), "n": 1, "years": 0, "diff": 1},
]
assert got == want, got
assert out.updates().schema.field("total").type == pa.decimal128(38, 2)
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("pandas", "pyspark", "polars"))
assert not leaked, f"ddflow imported optional packages: {leaked[:5]}"
print("capture ok:", got)
EOF
)

echo "== smoke: the examples gallery"
for example in orders_dashboard top_sellers friend_groups sssp clickstream; do
  (cd "$WORK" && "$VPY" -m "ddflow.examples.$example" | tail -n 1)
done

echo "== smoke: python -m ddflow.doctor"
(cd "$WORK" && "$VPY" -m ddflow.doctor)

echo "wheel_smoke: ok in $((SECONDS - start)) s"
