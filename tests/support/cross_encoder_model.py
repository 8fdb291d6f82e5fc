"""A TEST DOUBLE of a cross-encoder model file: a tiny ONNX graph with a cross-encoder's inputs and output, built
with the `onnx` package at test time. It is not a model: its logit for a (query, document) pair counts the
document's tokens that belong to a fixed word list, which lets OnnxCrossEncoderReranker's tokenisation of pairs,
batching and output handling be tested where no real cross-encoder can be downloaded."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import numpy as np


def minilm_vocabulary_ids(words: Iterable[str]) -> list[int]:
    from tokenizers import Tokenizer

    text = resources.files("rearview").joinpath("assets/minilm_tokenizer.json").read_text("utf-8")
    vocab = Tokenizer.from_str(text).get_vocab()
    return sorted({vocab[w] for w in words if w in vocab})


def write_word_count_cross_encoder(
    path: Path, words: Iterable[str], *, token_types: bool = True, two_class: bool = False
) -> Path:
    """Write the model to `path`: logit = how many of the second segment's tokens are among `words` (with
    `token_types=False` the graph has no token_type_ids input and counts the whole pair); `two_class` answers
    (batch, 2) as [-logit, logit]."""
    from onnx import TensorProto, checker, helper, numpy_helper

    weights = np.zeros(30522, dtype=np.float32)
    weights[minilm_vocabulary_ids(words)] = 1.0
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
    ]
    nodes = [helper.make_node("Gather", ["weights", "input_ids"], ["hits"], axis=0)]
    if token_types:
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "tokens"]))
        nodes.append(helper.make_node("Mul", ["attention_mask", "token_type_ids"], ["counted"]))
    else:
        nodes.append(helper.make_node("Identity", ["attention_mask"], ["counted"]))
    nodes += [
        helper.make_node("Cast", ["counted"], ["counted_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["hits", "counted_f"], ["scored"]),
        helper.make_node("ReduceSum", ["scored", "axes"], ["logit" if two_class else "logits"], keepdims=1),
    ]
    if two_class:
        nodes += [
            helper.make_node("Neg", ["logit"], ["not_logit"]),
            helper.make_node("Concat", ["not_logit", "logit"], ["logits"], axis=1),
        ]
    graph = helper.make_graph(
        nodes,
        "word_count_cross_encoder",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2 if two_class else 1])],
        initializer=[
            numpy_helper.from_array(weights, "weights"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axes"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="rearview-tests")
    model.ir_version = 8
    checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return path
