"""The blocks of a `graph` model: each block's layer class, ports, palette group and parameters.

A block is one Keras or keras_seq layer with one output. Its *ports* are the
tensors it reads, in the order its `call` takes them positionally; an
*optional port* is passed by keyword (the attention layers' `key`); a
*variadic port* takes a list of two or more tensors (`Add`, `Concatenate`).
`Input` and `Output` are the two special blocks: the task's input, and the
task's head (softmax over the classes, or a linear regressor; after a decoder
block, `RecurrentDecoder` or `TransformerDecoder`, the block of a translating
graph, a softmax over the target words).

What is here is plain data, known without Keras, so that validating a spec's
structure (`builder_ui.builders.graph`) does not load it. The parameters are
the layer's own constructor arguments, read from its signature when first asked
for (`parameters(block)`, which imports Keras): a parameter is offered when
it has a JSON default (or none), is not `name`/`dtype`/`**kwargs`, and is not
one that would break "one block, one output tensor" (`return_state`, ...).

Plugins add blocks with `register_block`; they show in the `Plugins` group.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any

GROUPS = (
    "Inputs and outputs",
    "Embeddings and positions",
    "Recurrent",
    "Attention",
    "Transformer",
    "Decoders",
    "Vision",
    "Pooling",
    "Layers",
    "Merge",
    "Plugins",
)
KINDS = ("int", "float", "bool", "str", "choice")

INPUT, OUTPUT = "Input", "Output"
# A translating graph's whole decoder, one composite block (`graph_decoder`).
RECURRENT_DECODER, TRANSFORMER_DECODER = "RecurrentDecoder", "TransformerDecoder"
CAPTION_DECODER, POINTER_DECODER = "CaptionDecoder", "PointerDecoder"
# The decoder blocks a task's kind of targets takes (`decoded_kind`): token sequences from
# token sequences, captions (token sequences from images), or input positions.
DECODERS_FOR = {
    "sequence": (RECURRENT_DECODER, TRANSFORMER_DECODER),
    "caption": (CAPTION_DECODER,),
    "pointer": (POINTER_DECODER,),
}
DECODERS = (RECURRENT_DECODER, TRANSFORMER_DECODER, CAPTION_DECODER, POINTER_DECODER)


def decoded_kind(task: Any) -> str | None:
    """The key of `DECODERS_FOR` whose blocks write the task's targets, or None when a
    graph's Output writes them (classes, values, frames)."""
    kind = task.targets.kind
    if kind == "sequence" and task.inputs.kind == "image":
        return "caption"
    return kind if kind in DECODERS_FOR else None


def decoders_for(task: Any) -> tuple[str, ...]:
    """The decoder blocks that can write the task's targets (none: the Output writes them)."""
    return DECODERS_FOR.get(decoded_kind(task), ())


# Constructor arguments never offered: set by the builder, not JSON, or more than one output.
_NEVER = frozenset(
    {
        "name",
        "dtype",
        "trainable",
        "autocast",
        "input_shape",
        "weights",
        "lora_rank",
        "lora_alpha",
        "quantization_config",
        "return_state",
        "stateful",
        "time_major",
        "cell",
        "layer",
        "backward_layer",
    }
)
# The kind of an argument whose default (None) does not say it.
_KINDS_BY_NAME = {
    "seed": "int",
    "units": "int",
    "value_dim": "int",
    "output_shape": "int",
    "sliding_window": "int",
    "flash_attention": "bool",
    "rate": "float",
    "dropout": "float",
}
_RNN_MERGE_MODES = ("concat", "sum", "mul", "ave")


@dataclass(frozen=True)
class Param:
    """One parameter of a block, JSON-ready through `to_json`."""

    name: str
    kind: str
    default: Any = None
    required: bool = False
    choices: tuple[Any, ...] | None = None
    help: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "default": list(self.default) if isinstance(self.default, tuple) else self.default,
            "required": self.required,
            "choices": list(self.choices) if self.choices is not None else None,
            "help": self.help,
        }


@dataclass(frozen=True, eq=False)  # hashed by identity: `parameters` caches per block
class Block:
    """A palette block: which layer, read through which ports.

    Attributes:
        name: The block's name in specs (`layer: LSTM`).
        group: Its palette group (one of `GROUPS`).
        description: One line for people.
        target: `"module:Class"` of the layer, imported only when needed
            (empty for `Input` and `Output`).
        ports: Required ports, in the order `call` takes them.
        optional_ports: Ports passed by keyword when connected (`key`).
        variadic: Ports that take a list of two or more node ids.
        choices: Arguments that take one of a few values, and those values.
        kinds: Kinds of arguments whose default does not say it.
        filled: Arguments that may be omitted because the graph gives them
            (`input_dim` of an Embedding: the task's vocabulary), with how.
        recurrent: A recurrent layer: offers `bidirectional` and `merge_mode`,
            which wrap it in `keras.layers.Bidirectional`.
        states: Ports that take a recurrent node's final state (`h`, and `c`
            for an LSTM) rather than its output, one node or a list of them.
    """

    name: str
    group: str
    description: str
    target: str = ""
    ports: tuple[str, ...] = ("x",)
    optional_ports: tuple[str, ...] = ()
    variadic: tuple[str, ...] = ()
    choices: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    filled: dict[str, str] = field(default_factory=dict)
    recurrent: bool = False
    states: tuple[str, ...] = ()

    @property
    def all_ports(self) -> tuple[str, ...]:
        return self.ports + self.optional_ports

    def layer_class(self) -> type:
        """The layer class (imports its module, so Keras)."""
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


def _group(name: str) -> str:
    if name not in GROUPS:
        raise ValueError(f"no palette group {name!r}")
    return name


def _keras(name: str) -> str:
    return f"keras.layers:{name}"


def _seq(name: str) -> str:
    return f"keras_seq.layers:{name}"


_ATTENTION_PORTS = {"ports": ("query", "value"), "optional_ports": ("key",)}
_RECURRENT = {"recurrent": True}

_BUILTIN: tuple[Block, ...] = (
    Block(
        INPUT,
        _group("Inputs and outputs"),
        "The task's input: token ids, numeric steps or an image.",
        ports=(),
    ),
    Block(
        OUTPUT,
        _group("Inputs and outputs"),
        "The task's head: softmax over the classes or words, or a linear regressor.",
    ),
    Block(
        "Embedding",
        _group("Embeddings and positions"),
        "A learned vector per token id.",
        _keras("Embedding"),
        filled={"input_dim": "the task's vocabulary size"},
    ),
    Block(
        "SinusoidalPositionalEncoding",
        _group("Embeddings and positions"),
        "Adds the fixed sine/cosine positions of Vaswani et al. (2017).",
        _seq("SinusoidalPositionalEncoding"),
    ),
    Block(
        "LearnedPositionalEmbedding",
        _group("Embeddings and positions"),
        "Adds a learned vector per position.",
        _seq("LearnedPositionalEmbedding"),
        filled={"max_length": "the length of its input"},
    ),
    Block("SimpleRNN", _group("Recurrent"), "Elman's RNN.", _keras("SimpleRNN"), **_RECURRENT),
    Block(
        "GRU",
        _group("Recurrent"),
        "Cho et al. (2014): update and reset gates.",
        _keras("GRU"),
        **_RECURRENT,
    ),
    Block(
        "LSTM",
        _group("Recurrent"),
        "Keras's LSTM, with a forget gate.",
        _keras("LSTM"),
        **_RECURRENT,
    ),
    Block(
        "CECLSTM",
        _group("Recurrent"),
        "The 1997 LSTM's constant error carousel; forget gate, peepholes, truncation as options.",
        _seq("CECLSTM"),
        choices={
            "unit_forget_bias": (None, True, False),
            "implementation": (1, 2),
            "use_cudnn": ("auto", False),
        },
        # Default None: the 1997 values (−3, 1, −2) unless Keras's bias arguments are given.
        kinds={
            "input_gate_bias": "float",
            "forget_gate_bias": "float",
            "output_gate_bias": "float",
        },
        **_RECURRENT,
    ),
    Block(
        "ConvLSTM2D",
        _group("Recurrent"),
        "An LSTM whose steps are images (batch, time, rows, cols, channels).",
        _keras("ConvLSTM2D"),
        choices={"padding": ("valid", "same")},
    ),
    Block(
        "MultiHeadAttention",
        _group("Attention"),
        "Vaswani et al. (2017): h heads of scaled dot-product attention.",
        _keras("MultiHeadAttention"),
        **_ATTENTION_PORTS,
    ),
    Block(
        "ScaledDotProductAttention",
        _group("Attention"),
        "softmax(q kᵀ / √d) v, one head.",
        _seq("ScaledDotProductAttention"),
        **_ATTENTION_PORTS,
    ),
    Block(
        "BahdanauAttention",
        _group("Attention"),
        "Bahdanau et al. (2015): additive scores vᵀ tanh(W q + U k).",
        _seq("BahdanauAttention"),
        **_ATTENTION_PORTS,
    ),
    Block(
        "LuongAttention",
        _group("Attention"),
        "Luong et al. (2015): dot, general or concat scores.",
        _seq("LuongAttention"),
        choices={"score": ("dot", "general", "concat")},
        **_ATTENTION_PORTS,
    ),
    Block(
        "TransformerEncoderBlock",
        _group("Transformer"),
        "Self-attention and a feed-forward network, each with a residual and a norm.",
        _seq("TransformerEncoderBlock"),
    ),
    Block(
        "TransformerDecoderBlock",
        _group("Transformer"),
        "Causal self-attention over x, cross-attention to context, a feed-forward network.",
        _seq("TransformerDecoderBlock"),
        ports=("x", "context"),
    ),
    Block(
        RECURRENT_DECODER,
        _group("Decoders"),
        "A seq2seq's decoder (Sutskever 2014; Bahdanau or Luong attention): target embedding, "
        "recurrent cells reading the encoder's memory, from its state.",
        "builder_ui.builders.graph_decoder:DecoderBlock",
        ports=("memory",),
        optional_ports=("state",),
        states=("state",),
        choices={
            "cell": ("simple", "gru", "lstm", "cec_lstm"),
            "attention": (None, "bahdanau", "luong_dot", "luong_general", "luong_concat"),
        },
        kinds={"attention_units": "int"},
        filled={
            "target_vocab_size": "the task's target vocabulary size",
            "target_length": "the task's target length",
        },
    ),
    Block(
        TRANSFORMER_DECODER,
        _group("Decoders"),
        "The Transformer's decoder (Vaswani 2017): target embedding ·√d, positions, causal "
        "blocks cross-attending to the encoder's memory; decodes with a key/value cache.",
        "builder_ui.builders.graph_decoder:TransformerDecoderStack",
        ports=("memory",),
        choices={"positions": ("sinusoidal", "learned")},
        filled={
            "target_vocab_size": "the task's target vocabulary size",
            "target_length": "the task's target length",
        },
    ),
    Block(
        CAPTION_DECODER,
        _group("Decoders"),
        "Show, Attend and Tell's decoder (Xu 2015): an LSTM from the mean region, attending "
        "over the image encoder's feature map, one word per step.",
        "builder_ui.builders.graph_decoder:CaptionDecoderBlock",
        ports=("memory",),
        choices={"cell": ("simple", "gru", "lstm", "cec_lstm")},
        kinds={"attention_units": "int"},
        filled={
            "target_vocab_size": "the task's caption vocabulary size",
            "target_length": "the task's caption length",
        },
    ),
    Block(
        POINTER_DECODER,
        _group("Decoders"),
        "A pointer network's decoder (Vinyals 2015): each step a distribution over the input "
        "positions, fed the element it pointed at, from the encoder's state.",
        "builder_ui.builders.graph_decoder:PointerDecoderBlock",
        ports=("memory",),
        optional_ports=("state",),
        states=("state",),
        choices={"cell": ("lstm", "gru", "cec_lstm")},
        filled={
            "input_features": "the task's input features",
            "target_length": "the task's number of pointers",
        },
    ),
    Block(
        "PatchEmbedding",
        _group("Vision"),
        "Cuts an image into P×P patches, each projected to a token.",
        _seq("PatchEmbedding"),
    ),
    Block("ClassToken", _group("Vision"), "Prepends a learned class token.", _seq("ClassToken")),
    Block(
        "GlobalAveragePooling1D",
        _group("Pooling"),
        "The mean over time.",
        _keras("GlobalAveragePooling1D"),
        choices={"data_format": ("channels_last", "channels_first")},
    ),
    Block(
        "GlobalMaxPooling1D",
        _group("Pooling"),
        "The maximum over time.",
        _keras("GlobalMaxPooling1D"),
        choices={"data_format": ("channels_last", "channels_first")},
    ),
    Block(
        "MaskedMeanPooling",
        _group("Pooling"),
        "The mean over the real steps.",
        _seq("MaskedMeanPooling"),
    ),
    Block(
        "ClassTokenPooling",
        _group("Pooling"),
        "The class token's vector.",
        _seq("ClassTokenPooling"),
    ),
    Block(
        "FinalStatePooling",
        _group("Pooling"),
        "A recurrent layer's final state: its last real step (both directions' if bidirectional).",
        _seq("FinalStatePooling"),
    ),
    Block(
        "MaxPooling2D",
        _group("Pooling"),
        "The largest value of each pool_size × pool_size window of a map (halves it at 2).",
        _keras("MaxPooling2D"),
        choices={"padding": ("valid", "same")},
        kinds={"pool_size": "int"},
    ),
    Block("Dense", _group("Layers"), "A fully connected layer on the last axis.", _keras("Dense")),
    Block(
        "Conv2D",
        _group("Layers"),
        "A 2-D convolution over images or maps (rows, cols, channels).",
        _keras("Conv2D"),
        choices={"padding": ("valid", "same")},
        kinds={"kernel_size": "int"},
    ),
    Block(
        "Reshape",
        _group("Layers"),
        "The same values in another shape (per example; a list such as [5, 16, 16, 1]).",
        _keras("Reshape"),
    ),
    Block(
        "Permute",
        _group("Layers"),
        "Reorders the axes after the batch (a list such as [2, 1]: 1 is the first).",
        _keras("Permute"),
    ),
    Block(
        "Dropout",
        _group("Layers"),
        "Zeroes a fraction of its inputs while training.",
        _keras("Dropout"),
    ),
    Block(
        "LayerNormalization",
        _group("Layers"),
        "Normalises each vector to zero mean and unit variance.",
        _keras("LayerNormalization"),
    ),
    Block(
        "Rescaling",
        _group("Layers"),
        "x · scale + offset (a Transformer scales its token embeddings by √d_model).",
        _keras("Rescaling"),
        kinds={"scale": "float"},
    ),
    Block(
        "ReverseWithinLength",
        _group("Layers"),
        "Reverses each sequence within its length, padding kept last (Sutskever et al. 2014).",
        _seq("ReverseWithinLength"),
    ),
    Block("Flatten", _group("Layers"), "All axes but the batch into one.", _keras("Flatten")),
    Block(
        "Add",
        _group("Merge"),
        "The sum of two or more tensors of one shape.",
        _keras("Add"),
        variadic=("x",),
    ),
    Block(
        "Concatenate",
        _group("Merge"),
        "Two or more tensors joined along an axis.",
        _keras("Concatenate"),
        variadic=("x",),
    ),
)

_PLUGINS: dict[str, Block] = {}
_LOCK = threading.Lock()


def register_block(name: str, target: str, description: str = "", **options: Any) -> Block:
    """Add a plugin's layer to the palette, in the `Plugins` group.

    Args:
        name: The block's name in specs; not one of the built-in blocks.
        target: `"module:Class"` of a Keras layer with one output.
        description: One line for people.
        **options: `ports`, `optional_ports`, `variadic`, `choices`,
            `kinds`, `filled`, as `Block` takes them.

    Returns:
        The registered `Block`.
    """
    if any(block.name == name for block in _BUILTIN):
        raise ValueError(f"block {name!r} is built in and cannot be replaced")
    block = Block(name, GROUPS[-1], description, target, **options)
    with _LOCK:
        _PLUGINS[name] = block
    parameters.cache_clear()
    return block


def blocks() -> tuple[Block, ...]:
    """Every block, in palette order (built-in, then plugins by name)."""
    with _LOCK:
        plugins = tuple(_PLUGINS[name] for name in sorted(_PLUGINS))
    return _BUILTIN + plugins


def block(name: str) -> Block | None:
    """The block called `name`, or None."""
    return next((item for item in blocks() if item.name == name), None)


def block_names() -> list[str]:
    return [item.name for item in blocks()]


def _is_json(value: Any) -> bool:
    scalar = (type(None), bool, int, float, str)
    if isinstance(value, (list, tuple)):
        return all(isinstance(item, scalar) for item in value)
    return isinstance(value, scalar)


def _kind(item: Block, name: str, default: Any) -> str:
    if name in item.choices:
        return "choice"
    if name in item.kinds:
        return item.kinds[name]
    for kind in (bool, int, float, str):  # bool first: True is also an int
        if type(default) is kind:
            return kind.__name__
    if name in _KINDS_BY_NAME:
        return _KINDS_BY_NAME[name]
    if name.endswith(("_dim", "_size", "_length", "units", "filters", "heads")):
        return "int"
    return "str"


def _help(item: Block, name: str, required: bool) -> str:
    if name in item.filled:
        return f"Default: {item.filled[name]}."
    if required:
        return "Required."
    return ""


@functools.cache
def parameters(item: Block) -> tuple[Param, ...]:
    """The block's parameters, read from its layer's constructor signature (imports Keras)."""
    if not item.target:
        return ()
    found = []
    for name, argument in inspect.signature(item.layer_class()).parameters.items():
        never = name in _NEVER and name not in item.choices  # a block may offer one by name
        if argument.kind in (argument.VAR_POSITIONAL, argument.VAR_KEYWORD) or never:
            continue
        empty = argument.default is inspect.Parameter.empty
        default = None if empty else argument.default
        if not _is_json(default):
            continue
        required = empty and name not in item.filled
        found.append(
            Param(
                name,
                _kind(item, name, default),
                default,
                required,
                item.choices.get(name),
                _help(item, name, required),
            )
        )
    if item.recurrent:
        found += [
            Param(
                "bidirectional", "bool", False, help="Read both ways (keras.layers.Bidirectional)."
            ),
            Param(
                "merge_mode",
                "choice",
                "concat",
                choices=_RNN_MERGE_MODES,
                help="How Bidirectional joins the two directions.",
            ),
        ]
    return tuple(found)
