"""Regenerate `bfcl_corpus.json` from the `bfcl-eval` wheel's data, without importing it.

    pip download bfcl-eval==2026.3.23 --no-deps -d /tmp/bfcl
    python tests/proxy/upstreams/emulation/build_corpus.py \
        /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl

BFCL (Apache-2.0) ships questions with tool schemas and the allowed values of each call's
arguments. A case keeps the tools (as OpenAI tools, names with `.` made `_`) and one
ground-truth call list (the first allowed value of each argument; optional ones left out).
Irrelevance cases keep the tools and the question: no call is expected.
"""

from __future__ import annotations

import json
import random
import sys
import zipfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("bfcl_corpus.json")
SAMPLE = {
    "simple_python": 40,
    "multiple": 30,
    "parallel": 30,
    "parallel_multiple": 30,
    "live_simple": 30,
    "live_multiple": 20,
    "live_parallel": 8,
    "live_parallel_multiple": 8,
}
IRRELEVANT = {"irrelevance": 30, "live_irrelevance": 20}
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def _lines(wheel: zipfile.ZipFile, name: str) -> list[dict[str, Any]]:
    text = wheel.read(f"bfcl_eval/data/{name}").decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _schema(node: Any) -> Any:
    """BFCL's schema dialect as JSON schema: dict→object, float→number, tuple→array."""
    if isinstance(node, list):
        return [_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _schema(v) for k, v in node.items() if k != "type"}
    kind = node.get("type")
    if isinstance(kind, str):
        mapped = _TYPES.get(kind, kind)
        if mapped is not None:
            out["type"] = mapped
    if "properties" in node:
        out["properties"] = {k: _schema(v) for k, v in node["properties"].items()}
    return out


def _wire(name: str) -> str:
    return name.replace(".", "_")


def _tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": _wire(f["name"]),
                "description": f.get("description", ""),
                "parameters": _schema(f.get("parameters") or {"type": "object"}),
            },
        }
        for f in functions
    ]


def _calls(ground_truth: list[dict[str, Any]]) -> list[list[Any]]:
    calls = []
    for entry in ground_truth:
        ((name, params),) = entry.items()
        arguments = {k: v[0] for k, v in params.items() if v and "" not in v}
        calls.append([_wire(name), arguments])
    return calls


def build(wheel_path: Path) -> dict[str, Any]:
    """The corpus as a JSON-ready dict."""
    rng = random.Random(20260323)
    cases, irrelevant = [], []
    with zipfile.ZipFile(wheel_path) as wheel:
        for category, size in SAMPLE.items():
            questions = _lines(wheel, f"BFCL_v4_{category}.json")
            answers = {
                a["id"]: a for a in _lines(wheel, f"possible_answer/BFCL_v4_{category}.json")
            }
            for q in sorted(
                rng.sample(questions, min(size, len(questions))), key=lambda q: q["id"]
            ):
                cases.append(
                    {
                        "id": q["id"],
                        "category": category,
                        "tools": _tools(q["function"]),
                        "calls": _calls(answers[q["id"]]["ground_truth"]),
                    }
                )
        for category, size in IRRELEVANT.items():
            questions = _lines(wheel, f"BFCL_v4_{category}.json")
            for q in sorted(rng.sample(questions, size), key=lambda q: q["id"]):
                irrelevant.append(
                    {
                        "id": q["id"],
                        "category": category,
                        "tools": _tools(q["function"]),
                        "question": q["question"][0][-1]["content"][:300],
                    }
                )
    return {
        "source": f"bfcl-eval wheel {wheel_path.name} (Apache-2.0), bfcl_eval/data",
        "cases": cases,
        "irrelevance": irrelevant,
    }


def main(argv: list[str]) -> None:
    """Write the corpus next to this script."""
    if len(argv) != 1:
        raise SystemExit(__doc__)
    corpus = build(Path(argv[0]))
    # One case per line keeps diffs readable when the corpus is regenerated.
    lines = [json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in corpus["cases"]]
    irrelevant = [
        json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in corpus["irrelevance"]
    ]
    text = (
        f'{{"source":{json.dumps(corpus["source"])},\n"cases":[\n'
        + ",\n".join(lines)
        + '\n],\n"irrelevance":[\n'
        + ",\n".join(irrelevant)
        + "\n]}\n"
    )
    OUT.write_text(text, encoding="utf-8")
    print(f"{OUT}: {len(corpus['cases'])} cases, {len(corpus['irrelevance'])} irrelevance")


if __name__ == "__main__":
    main(sys.argv[1:])
