"""Extraction at write, turn by turn: what `extract: true` learns from one turn, against what a reader would learn.

50 single turns, 26 English and 24 Chinese, written as users talk to an assistant, 48 of them before the rules were
run on them (a development set all the same: whoever wrote them knew the rules):
turns that state a lasting fact or preference about the user, and turns that must teach nothing (a question, small
talk, a one-off errand, someone else's preference, something the user no longer does said as past). Each turn is
written with `extract: true` into a namespace of its own; a memory is right when its statement matches the turn's
expected pattern (regex, any case). Printed: precision (memories right), recall (expected memories found), negatives
with a memory, per language; `--inducer openai` runs a model served OpenAI-compatibly (llama_cpp.server, Ollama),
`--inducer llama_cpp` a GGUF file in this process.

    python bench/extraction_turns.py [--embedder e5] [--inducer rules|openai --openai-base-url URL --openai-model M]
    python bench/extraction_turns.py --inducer llama_cpp --model-path FILE.gguf     # in process, JSON by grammar
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from metrics import format_table
from rearview.bootstrap import build
from rearview.clock import ManualClock
from rearview.domain.memory import Fact
from rearview.domain.search import MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.settings import OpenAISettings, Settings


@dataclass(frozen=True)
class Turn:
    text: str
    expected: tuple[str, ...] = ()  # one regex per memory a reader would learn; none: the turn teaches nothing

    @property
    def chinese(self) -> bool:
        return any("\u4e00" <= ch <= "\u9fff" for ch in self.text)


TURNS: tuple[Turn, ...] = (
    # English: lasting facts and preferences said once.
    Turn("Just so you know, I'm lactose intolerant, so no dairy in the recipes.", (r"lactose|dairy",)),
    Turn("I moved to Denver in March.", (r"denver",)),
    Turn("I work as a paediatric nurse, mostly night shifts.", (r"nurse",)),
    Turn("Please always give me temperatures in Celsius.", (r"celsius",)),
    Turn("I'm allergic to shellfish.", (r"shellfish",)),
    Turn("My dog is called Pepper, she's a border collie.", (r"pepper",)),
    Turn("Keep your answers short, I read them on my phone.", (r"short|concise|brief",)),
    Turn("I'm vegan these days.", (r"vegan",)),
    Turn("I prefer Python over JavaScript for scripts.", (r"python",)),
    Turn("I always fly with a window seat if I can.", (r"window",)),
    Turn("My name is Daniel, by the way.", (r"daniel",)),
    Turn("I've been working at Northwind Traders for six years now.", (r"northwind",)),
    Turn("Reply in Spanish from now on, please.", (r"spanish",)),
    Turn("I swim every morning before work.", (r"swim",)),
    # English: nothing lasting about the user.
    Turn("What's the capital of Australia?"),
    Turn("Thanks, that was really helpful!"),
    Turn("Can you book a table for two at 7 tonight?"),
    Turn("My colleague Priya prefers meetings after 3pm."),
    Turn("My brother lives in Toronto and loves hockey."),
    # Added later (stop 57), knowing the rules: a named person's own words, reported with an irregular verb.
    Turn("Priya said she prefers aisle seats on long flights."),
    Turn("Tom told me he only drinks oat milk."),
    Turn("How do I convert a list to a set in Python?"),
    Turn("Haha, that's a funny one."),
    Turn("Send the invoice to the client today."),
    Turn("The weather was awful during our trip last year."),
    Turn("Good morning! Hope your day is going well."),
    # Chinese: lasting facts and preferences said once.
    Turn("我对芒果过敏，推荐水果的时候注意一下。", (r"芒果",)),
    Turn("我上个月搬到成都了。", (r"成都",)),
    Turn("以后都用中文回答我。", (r"中文|chinese",)),
    Turn("我是一名中学物理老师。", (r"物理|老师|教师",)),
    Turn("我吃素，别给我推荐肉菜。", (r"素|vegetarian",)),
    Turn("我家的猫叫团子。", (r"团子",)),
    Turn("回答简短一点，我一般在地铁上看。", (r"简短|简洁|short|concise",)),
    Turn("我每天早上跑步五公里。", (r"跑步|running",)),
    Turn("我在华为做软件测试。", (r"华为",)),
    Turn("我习惯用公制单位，别给我英里和磅。", (r"公制|metric",)),
    Turn("我叫李明。", (r"李明",)),
    Turn("以后代码示例都用Go写。", (r"go",)),
    # Chinese: nothing lasting about the user.
    Turn("今天天气怎么样？"),
    Turn("谢谢，辛苦了！"),
    Turn("帮我订一张明天去上海的高铁票。"),
    Turn("我同事小王喜欢喝美式咖啡。"),
    Turn("我妈住在杭州，她很喜欢养花。"),
    Turn("Python里怎么把列表去重？"),
    Turn("哈哈，这个笑话不错。"),
    Turn("把这份报告发给客户。"),
    Turn("去年旅游的时候一直下雨。"),
    Turn("早上好！"),
    Turn("你觉得这部电影怎么样？"),
    Turn("帮我查一下快递到哪了。"),
)


@dataclass(frozen=True)
class Row:
    turn: Turn
    statements: list[str]
    found: int  # expected memories found
    right: int  # statements that match an expected memory
    seconds: float
    tokens: int
    fallback: int  # runs whose statements the rules made instead of the model

    @property
    def clean(self) -> bool:
        return self.found == len(self.turn.expected) and self.right == len(self.statements)


def run(embedder: str, inducer: str, base_url: str, model: str, model_path: Path | None = None) -> list[Row]:
    clock = ManualClock(datetime(2026, 3, 10, 12, tzinfo=UTC))
    with tempfile.TemporaryDirectory(prefix="rearview-extraction-turns-") as tmp:
        settings = Settings(data_dir=Path(tmp), embedder=embedder, inducer=inducer, inducer_model_path=model_path,
                            openai=OpenAISettings(base_url=base_url, model=model))  # fmt: skip
        services = build(settings, clock=clock)
        out = []
        for n, turn in enumerate(TURNS):
            namespace = f"bench:turn-{n}"
            started = time.perf_counter()
            services.writer.write(namespace, MemoryWrite(content=turn.text, extract=True))
            seconds = time.perf_counter() - started
            held = services.store.list_memories(namespace, MemoryFilter(layers=("semantic",)))
            statements = [m.content for m in held if isinstance(m, Fact)]
            found = [p for p in turn.expected if any(re.search(p, s, re.IGNORECASE) for s in statements)]
            right = [s for s in statements if any(re.search(p, s, re.IGNORECASE) for p in turn.expected)]
            runs = services.ledger.runs(namespace)
            tokens, fallback = sum(r.tokens for r in runs), sum(1 for r in runs if r.fallback)
            out.append(Row(turn, statements, len(found), len(right), seconds, tokens, fallback))
        services.close()
    return out


def report(rows: list[Row], label: str) -> str:
    table: list[list[object]] = []
    for name, chinese in (("en", False), ("zh", True), ("all", None)):
        part = [r for r in rows if chinese is None or r.turn.chinese == chinese]
        made = sum(len(r.statements) for r in part)
        right = sum(r.right for r in part)
        expected = sum(len(r.turn.expected) for r in part)
        found = sum(r.found for r in part)
        negatives = [r for r in part if not r.turn.expected]
        table.append([
            name, len(part), f"{right / made:.3f} ({right}/{made})" if made else "-",
            f"{found / expected:.3f} ({found}/{expected})",
            f"{sum(1 for r in negatives if r.statements)}/{len(negatives)}",
            f"{1000 * sum(r.seconds for r in part) / max(len(part), 1):.0f}", sum(r.tokens for r in part),
            sum(r.fallback for r in part),
        ])  # fmt: skip
    header = ["turns", "n", "precision", "recall", "negatives with a memory", "ms a write", "model tokens",
              "runs the rules stated instead"]  # fmt: skip
    lines = [format_table(header, table, title=f"== extraction at write, one turn each ({label}) =="), ""]
    lines += [f"{'ok ' if r.clean else '-- '}{r.turn.text[:60]!r} -> {r.statements}" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", choices=["minilm", "e5", "hashing"], default="e5")
    parser.add_argument("--inducer", choices=["rules", "openai", "llama_cpp"], default="rules")
    parser.add_argument("--model-path", type=Path, default=None, help="the GGUF file of --inducer llama_cpp")
    parser.add_argument("--openai-base-url", default="http://127.0.0.1:8080/v1")
    parser.add_argument("--openai-model", default="smollm2")
    args = parser.parse_args(argv)
    rows = run(args.embedder, args.inducer, args.openai_base_url, args.openai_model, args.model_path)
    model = args.model_path.name if args.model_path else args.openai_model
    label = args.inducer if args.inducer == "rules" else f"{args.inducer}: {model}"
    print(report(rows, f"{label}, {args.embedder}"), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
