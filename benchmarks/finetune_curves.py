"""Few-shot fine-tuning curves: the bundled model fine-tuned on 25 / 50 / 100 / 300 lines of a collection,
read on held-out lines of the same collection, greedy and beam, against the bundled model itself.

    PYTHONPATH=. python benchmarks/finetune_curves.py --work /tmp/ft splits        # write the splits (seconds)
    PYTHONPATH=. python benchmarks/finetune_curves.py --work /tmp/ft run washington:25 stanford:100 copiste:300
    PYTHONPATH=. python benchmarks/finetune_curves.py --work /tmp/ft baseline      # the bundled model, same lines
    PYTHONPATH=. python benchmarks/finetune_curves.py --work /tmp/ft table

Splits (development data in ../shared/data, read its README): Stanford 1905 and Washington 1755 are split by
page (letter): whole pages go to a pool of about 100 fine-tuning lines, the other pages are held out (neither
set has 300 lines). Copiste (French): the pool is 300 lines of ``train/`` pages, the held-out lines are
``val/`` (writers never seen). Lines holding Copiste's crossed-out marks (``>...<``) are left out of both. The
sizes are nested (25 ⊂ 50 ⊂ 100 ⊂ 300), seeded. Each run is ``text-recognizer-train --finetune`` with its
defaults (10% of the fine-tuning lines held out inside the run to choose best.pt; the reported lines are never
seen), timed by the wall clock (run alone on the machine). ``--lm-text``: IAM train + train_extra labels for
the English sets when the alphabet grows (Washington's ``£``), Copiste ``train/`` labels for French (never
``val/``); otherwise the parent's bundle is re-tuned. CER is ``training/evaluate.py``'s ``cer_natural``
(spaces next to punctuation ignored, as shared/data's README scores these sets). ``forgetting``: each
model's greedy CER on IAM val.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
BUNDLED = REPO / "text_recognizer" / "artifacts" / "default.pt"
SIZES = (25, 50, 100, 300)
IAM_TEXT = [str(DATA / "iam" / "train"), str(DATA / "iam" / "train_extra")]


def _page(path: Path) -> str:
    name = path.stem
    return name.rsplit("_", 1)[0] if name.startswith("jls_") else name.rsplit("-", 1)[0]


def _write(folder: Path, records) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["file\ttext"] + [f"{Path(p).resolve()}\t{t}" for p, t in records]
    (folder / "labels.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def make_splits(work: Path, seed: int = 0) -> None:
    from text_recognizer.data.folder import read_labels
    from text_recognizer.data.page import cut_layout_folder

    rng = random.Random(seed)
    for name, folder in (("stanford", "stanford_memorials_1905"), ("washington", "gw_washington_1755")):
        records = [(r.path, r.text) for r in read_labels(DATA / folder)]
        pages = sorted({_page(p) for p, _ in records})
        rng.shuffle(pages)
        pool, chosen = [], set()
        for page in pages:
            if len(pool) >= 100:
                break
            chosen.add(page)
            pool += [r for r in records if _page(r[0]) == page]
        held = [r for r in records if _page(r[0]) not in chosen]
        rng.shuffle(pool)
        _write(work / name / "held_out", held)
        _write(work / name / "pool", pool)
        print(f"{name}: pool {len(pool)} lines of {len(chosen)} pages, held out {len(held)} lines")

    # Stanford again, split by line: the same letters (writers) on both sides, as when one's own hand is adapted
    records = [(r.path, r.text) for r in read_labels(DATA / "stanford_memorials_1905")]
    random.Random(seed + 1).shuffle(records)  # its own generator: the other splits stay as they were
    _write(work / "stanford_lines" / "pool", records[:100])
    _write(work / "stanford_lines" / "held_out", records[100:])
    print(f"stanford_lines: pool 100 lines, held out {len(records) - 100} lines of the same letters")

    def clean(records):
        return [(r.path, r.text) for r in records if ">" not in r.text and "<" not in r.text]

    train = clean(cut_layout_folder(DATA / "copiste_dun_jour" / "train").records)
    val = clean(cut_layout_folder(DATA / "copiste_dun_jour" / "val").records)
    pages = sorted({str(p.parent) for p, _ in train})
    rng.shuffle(pages)
    pool = []
    for page in pages:
        if len(pool) >= 300:
            break
        pool += [r for r in train if str(r[0].parent) == page]
    pool = pool[:300]
    rng.shuffle(pool)
    _write(work / "copiste" / "held_out", val)
    _write(work / "copiste" / "pool", pool)
    _write(work / "copiste" / "lm_text", [(p, t) for p, t in train if (p, t) not in set(pool)])
    print(f"copiste: pool {len(pool)} lines, held out {len(val)} val lines, LM text {len(train) - len(pool)} "
          "other train lines")
    for name in ("stanford", "washington", "copiste", "stanford_lines"):
        pool = (work / name / "pool" / "labels.tsv").read_text(encoding="utf-8").splitlines()[1:]
        for size in SIZES:
            if size <= len(pool):
                (work / name / f"train_{size}").mkdir(exist_ok=True)
                (work / name / f"train_{size}" / "labels.tsv").write_text(
                    "\n".join(["file\ttext", *pool[:size]]) + "\n", encoding="utf-8")


def evaluate(checkpoint: Path, data: Path, decoder: str) -> float:
    out = subprocess.run([sys.executable, "training/evaluate.py", "--checkpoint", str(checkpoint), "--data",
                          str(data), "--json", "--decoder", decoder], cwd=REPO, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)["cer_natural"]


def _results(work: Path) -> dict:
    path = work / "results.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def record(work: Path, key: str, values: dict) -> None:
    path = work / "results.json"
    results = json.loads(path.read_text()) if path.is_file() else {}
    results[key] = {**results.get(key, {}), **values}
    path.write_text(json.dumps(results, indent=1))
    print(key, values, flush=True)


def lm_text_for(work: Path, name: str, train: Path) -> list[str]:
    if name == "copiste":
        return [str(work / "copiste" / "lm_text")]
    name = name.removesuffix("_lines")
    from text_recognizer.codec import Codec
    from text_recognizer.data.folder import read_labels

    grows = any(c not in Codec().charset for r in read_labels(train) for c in r.text)
    return IAM_TEXT if grows else []


def run(work: Path, spec: str, extra: list[str]) -> None:
    name, size = spec.split(":")
    train = work / name / f"train_{size}"
    tag = "-".join([spec.replace(":", "-"), *[e.strip("-") for e in extra if e.startswith("--")]])
    run_dir = work / "runs" / tag
    lm = lm_text_for(work, name, train)
    command = [sys.executable, "training/run_experiment.py", "--finetune", str(BUNDLED), "--data", str(train),
               "--run-dir", str(run_dir), "--progress", "false", *(["--lm-text", *lm] if lm else []), *extra]
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True)
    minutes = (time.perf_counter() - start) / 60
    summary = json.loads((run_dir / "summary.json").read_text())
    best = run_dir / "best.pt"
    values = {"collection": name, "lines": int(size), "extra": " ".join(extra), "wall_minutes": round(minutes, 2),
              "train_minutes": summary["elapsed_minutes"], "steps": summary["steps"],
              "greedy": evaluate(best, work / name / "held_out", "greedy")}
    if (run_dir / "best.decoder.pt").is_file():
        values["beam"] = evaluate(best, work / name / "held_out", "beam")
    values["iam_val_greedy"] = evaluate(best, DATA / "iam" / "val", "greedy")
    record(work, tag, values)


def baseline(work: Path) -> None:
    for name in ("stanford", "washington", "copiste", "stanford_lines"):
        if (work / name / "held_out").is_dir() and f"bundled-{name}" in _results(work):
            continue
        record(work, f"bundled-{name}", {"collection": name, "lines": 0,
                                         "greedy": evaluate(BUNDLED, work / name / "held_out", "greedy"),
                                         "beam": evaluate(BUNDLED, work / name / "held_out", "beam")})


def table(work: Path) -> None:
    results = json.loads((work / "results.json").read_text())
    by = defaultdict(list)
    for key, r in results.items():
        by[r["collection"]].append((r["lines"], key, r))
    print("| collection | lines | extra | greedy | beam | IAM val greedy | minutes (train / wall) |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name in ("stanford", "stanford_lines", "washington", "copiste"):
        for lines, _key, r in sorted(by[name], key=lambda x: (x[0], x[1])):
            def pct(k, r=r):
                return f"{100 * r[k]:.2f}%" if k in r else "-"

            minutes = f"{r['train_minutes']:.1f} / {r['wall_minutes']:.1f}" if "wall_minutes" in r else "-"
            print(f"| {name} | {lines or 'bundled'} | {r.get('extra', '')} | {pct('greedy')} | {pct('beam')} | "
                  f"{pct('iam_val_greedy')} | {minutes} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ft"))
    parser.add_argument("action", choices=("splits", "run", "baseline", "table"))
    parser.add_argument("specs", nargs="*", help="collection:lines, e.g. stanford:100")
    parser.add_argument("--extra", default="", help="more fine-tuning flags, e.g. '--replay DIR'")
    args = parser.parse_args(argv)
    if args.action == "splits":
        make_splits(args.work)
    elif args.action == "run":
        for spec in args.specs:
            run(args.work, spec, args.extra.split())
    elif args.action == "baseline":
        baseline(args.work)
    else:
        table(args.work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
