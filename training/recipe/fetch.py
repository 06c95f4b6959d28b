"""The ``fetch`` stage of a recipe: fonts and other packages from the npm registry (as docs/datasets.md does by
hand), built in a ``.partial`` folder so that a stopped fetch never passes for a finished one.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from training.recipe.spec import RecipeError, Stage

FONT_FILE = "{}-latin-400-normal.woff"


def fetch(stage: Stage) -> None:
    """Fonts (and npm packages) into ``out``: built in a ``.partial`` folder, renamed when complete."""
    out, spec = stage.outputs[0], stage.fetch
    if out.is_dir() and (spec["files"] is None or _count(out) == spec["files"]) and \
            all((out / folder).is_dir() for folder in spec["packages"]):
        print(f"[recipe] {stage.name}: {out} is already there (fetched before): kept")
        return
    if out.exists():
        raise RecipeError(f"stage {stage.name}: {out} exists but is not what this stage makes ({_count(out)} files, "
                          f"expected {spec['files'] or 'the packages'}): move it away or point the variable elsewhere")
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for folder in spec["include"]:
        for item in sorted(Path(folder).iterdir()):
            if item.is_file():
                shutil.copy2(item, partial / item.name)
    if spec["fonts"] or spec["packages"]:
        npm = shutil.which("npm")
        if npm is None:
            raise RecipeError(f"stage {stage.name}: fetching needs npm (the fonts and texts come from the npm "
                              "registry: docs/datasets.md)")
        with tempfile.TemporaryDirectory() as scratch:
            for name in spec["fonts"]:
                with tarfile.open(_npm_pack(npm, f"@fontsource/{name}", Path(scratch))) as archive:
                    member = _font_member(archive, name)
                    data = archive.extractfile(member)
                    (partial / FONT_FILE.format(name)).write_bytes(data.read())
            for folder, package in spec["packages"].items():
                with tarfile.open(_npm_pack(npm, package, Path(scratch))) as archive:
                    archive.extractall(partial / folder, filter="data")
    for name in spec["copies"]:
        source = partial / FONT_FILE.format(name)
        if not source.is_file():
            raise RecipeError(f"stage {stage.name}: copies: no {source.name} among the included or fetched fonts")
        shutil.copy2(source, partial / f"copy2-{source.name}")
    if spec["files"] and _count(partial) != spec["files"]:
        raise RecipeError(f"stage {stage.name}: made {_count(partial)} font files, the recipe expects {spec['files']}")
    partial.rename(out)


def _npm_pack(npm: str, package: str, scratch: Path) -> Path:
    print(f"[recipe] npm pack {package}", flush=True)
    done = subprocess.run([npm, "pack", "-q", package], cwd=scratch, capture_output=True, text=True)
    if done.returncode != 0:
        raise RecipeError(f"npm pack {package} failed: {done.stderr.strip()[-500:]}")
    return scratch / done.stdout.strip().splitlines()[-1]


def _font_member(archive: tarfile.TarFile, name: str) -> tarfile.TarInfo:
    files = [m for m in archive.getmembers() if m.isfile() and m.name.endswith("-latin-400-normal.woff")]
    exact = [m for m in files if Path(m.name).name == FONT_FILE.format(name)]
    if len(exact) == 1 or len(files) == 1:
        return (exact or files)[0]
    raise RecipeError(f"@fontsource/{name}: no single latin-400-normal.woff file in the package "
                      f"({len(files)} candidates)")


def _count(folder: Path) -> int:
    return sum(1 for p in folder.iterdir() if p.is_file())
