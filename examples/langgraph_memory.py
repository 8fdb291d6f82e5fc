"""A LangGraph graph with Rearview as its long-term memory store: a node remembers what the user says about
themselves (`store.put`) and the next node finds what applies to the question (`store.search`, Rearview's recall),
across runs and threads. The same store serves any graph compiled with `store=`; `rearview_tools` gives a LangChain
agent `remember`, `recall` and `brief` as tools.

    pip install -e '.[client,langgraph,langchain]'   # from a clone of Rearview
    rearview serve &                                  # http://127.0.0.1:8765, open on loopback
    python examples/langgraph_memory.py u-42 "I always want an aisle seat" "Which seat should I book?"

REARVIEW_URL, REARVIEW_TOKEN (an API key) and REARVIEW_NAMESPACE (the base the graph's namespaces go under, default
`default`) say which Rearview and where.
"""

from __future__ import annotations

import argparse
import os
import uuid
from typing import Any, TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph

from rearview.client import RearviewClient
from rearview.integrations.langgraph_store import RearviewStore


class Turn(TypedDict):
    user: str
    said: str
    question: str
    recalled: list[str]


def remember(state: Turn) -> dict[str, Any]:
    """Keep what the user said about themselves, under a key of its own."""
    get_store().put(("users", state["user"], "memories"), str(uuid.uuid4()), {"text": state["said"]})
    return {}


def recall(state: Turn) -> dict[str, Any]:
    """What is remembered about the user that applies to the question, best first."""
    found = get_store().search(("users", state["user"], "memories"), query=state["question"], limit=3)
    return {"recalled": [item.value["text"] for item in found]}


def memory_graph(store: RearviewStore) -> Any:
    """The two nodes in a row, compiled with the store (a `CompiledStateGraph`)."""
    builder = StateGraph(Turn)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("user")
    parser.add_argument("said")
    parser.add_argument("question")
    args = parser.parse_args()
    url, token = os.environ.get("REARVIEW_URL", "http://127.0.0.1:8765"), os.environ.get("REARVIEW_TOKEN")
    with RearviewClient(url, token=token) as rv:
        graph = memory_graph(RearviewStore(rv, namespace=os.environ.get("REARVIEW_NAMESPACE", "default")))
        out = graph.invoke({"user": args.user, "said": args.said, "question": args.question, "recalled": []})
    print("\n".join(out["recalled"]) or "Nothing relevant is remembered.")


if __name__ == "__main__":
    main()
