"""The package as pyproject.toml declares it: entry points, package data, and an inference-only install.

Building and installing a wheel needs the network and minutes, so CI does not do it here (see the
README's "Installing"); these tests check what can go wrong in the declaration itself.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

#: Packages that only training, serving or development need; reading lines must work without them.
NOT_FOR_INFERENCE = ["wandb", "matplotlib", "yaml", "tqdm", "torchvision", "scipy", "HersheyFonts", "fastapi",
                     "uvicorn", "starlette", "pydantic", "prometheus_client", "pytest", "hypothesis"]


def _name(requirement: str) -> str:
    """``"torch~=2.14"`` -> ``"torch"``."""
    for i, char in enumerate(requirement):
        if not (char.isalnum() or char in "-_."):
            return requirement[:i].lower()
    return requirement.lower()


@pytest.mark.parametrize("command", sorted(PYPROJECT["project"]["scripts"]))
def test_entry_points_name_an_existing_main(command):
    module, _, function = PYPROJECT["project"]["scripts"][command].partition(":")
    assert callable(getattr(importlib.import_module(module), function)), f"{command} -> {module}:{function}"


def test_entry_points_cover_train_predict_evaluate_serve():
    expected = {f"text-recognizer-{c}" for c in ("train", "predict", "evaluate", "serve")}
    assert expected <= set(PYPROJECT["project"]["scripts"])


def test_package_data_files_exist_and_cover_what_the_code_loads():
    declared = {package: [path for pattern in patterns for path in (REPO / package).glob(pattern)]
                for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items()}
    for package, paths in declared.items():
        assert paths, f"package-data of {package} matches no file"
    shipped = {path for paths in declared.values() for path in paths}
    needed = [REPO / "text_recognizer" / "artifacts" / "default.pt", REPO / "text_recognizer" / "data" / "words.txt",
              REPO / "text_recognizer" / "artifacts" / "LICENSE-cmudict.txt",
              REPO / "text_recognizer" / "artifacts" / "segmenter.pt",  # the page reader's default segmenter
              REPO / "text_recognizer" / "artifacts" / "SEGMENTER_CARD.md",
              *(REPO / "text_recognizer" / "artifacts").glob("*.decoder.pt"),  # every language's bundle
              *(REPO / "text_recognizer" / "data" / "metadata").glob("*.toml"), *(REPO / "api" / "static").iterdir()]
    assert len(needed) > 4
    assert not [str(path) for path in needed if path not in shipped]


def test_inference_needs_only_the_core_dependencies():
    core = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    assert core == {"torch", "numpy", "pillow", "rapidfuzz"}
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"wandb", "matplotlib"} <= {_name(r) for r in extras["train"]}
    assert {"fastapi", "uvicorn"} <= {_name(r) for r in extras["serve"]}


def test_reading_and_evaluating_lines_imports_only_the_core_dependencies(tmp_path):
    """Predict and evaluate in a fresh process: every third-party distribution they import is a core
    dependency or one of its own requirements, and the training/serving-only packages cannot be imported."""
    core = [_name(r) for r in PYPROJECT["project"]["dependencies"]]
    script = textwrap.dedent(f"""
        import importlib.abc, re, sys
        from importlib.metadata import PackageNotFoundError, packages_distributions, requires
        BLOCKED = {NOT_FOR_INFERENCE!r}
        at_start = set(sys.modules)

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"{{name}} is blocked: not a core dependency")

        sys.meta_path.insert(0, Block())
        from text_recognizer.recognizer import main as predict
        from training.evaluate import main as evaluate
        assert predict([{str(REPO / "tests" / "fixtures" / "lines" / "line_00.png")!r}]) == 0
        assert evaluate(["--data", {str(REPO / "tests" / "fixtures" / "lines")!r}]) == 0

        norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
        allowed, todo = set(), [norm(n) for n in {core!r}]
        while todo:  # the core dependencies and everything they require (extras excluded)
            name = todo.pop()
            if name in allowed:
                continue
            allowed.add(name)
            try:
                needs = requires(name) or []
            except PackageNotFoundError:
                needs = []
            todo += [norm(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in needs if "extra ==" not in r]
        owners = packages_distributions()
        loaded = {{norm(d) for m in set(sys.modules) - at_start for d in owners.get(m.split(".")[0], [])}}
        print("outside the core:", sorted(loaded - allowed - {{"text-recognizer"}}))
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "outside the core: []" in result.stdout, result.stdout[-2000:]


def test_no_script_edits_sys_path():
    offenders = [str(path.relative_to(REPO)) for folder in ("text_recognizer", "training", "api", "benchmarks", "docs")
                 for path in (REPO / folder).rglob("*.py") if "sys.path.insert" in path.read_text(encoding="utf-8")]
    assert offenders == []
