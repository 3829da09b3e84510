"""What each experiment of the lab is about: its title and the papers' claim it tests.

Read without running anything: the experiment list of `keras-seq lab` and of the app's Lab
tab comes from here, so listing the experiments loads none of their code (which imports
Keras, Matplotlib and keras_seq at its top); `builder_ui.lab.suite` loads an experiment's
module when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

# Where `keras-seq lab` and `run_lab` write the report unless told otherwise.
DEFAULT_OUT_DIR = "lab-report"


@dataclass(frozen=True)
class Description:
    """An experiment's title and the claim it tests, with the papers' numbers."""

    title: str
    claim: str


DESCRIPTIONS: dict[str, Description] = {
    "gradients": Description(
        title="Vanishing gradients",
        claim=(
            "Backpropagated error decays exponentially with the time lag in a plain recurrent net "
            "(Hochreiter 1991; Bengio et al. 1994); the 1997 LSTM's constant error carousel, "
            "trained with truncated gradients, keeps the error flowing through the cell constant "
            "however long the lag (Hochreiter & Schmidhuber 1997). Gradient clipping caps "
            "exploding gradients but does nothing for vanishing ones (Pascanu et al. 2013)."
        ),
    ),
    "long_lags": Description(
        title="Long time lags",
        claim=(
            "The 1997 LSTM bridges minimal time lags in excess of 1000 steps on synthetic "
            "long-lag tasks with distractors, where recurrent nets trained by backpropagation "
            "through time or real-time recurrent learning fail beyond short lags. With q = 1000 "
            "and p = 1000 distractor symbols (experiment 2c) it needed about 49,000 training "
            "sequences, and its learning time grew only slowly with the lag when p grew with it "
            "(Hochreiter & Schmidhuber 1997)."
        ),
    ),
    "bottleneck": Description(
        title="The fixed-vector bottleneck",
        claim=(
            "An encoder–decoder that squeezes the source into one vector degrades as sentences "
            "grow, while attention keeps BLEU nearly flat over length: on WMT'14 English→French "
            "the fixed-vector model scores 17.82 BLEU and the attention model 26.75 (Bahdanau, "
            "Cho & Bengio 2015). Reading the source backwards helps the fixed-vector model: BLEU "
            "25.9 → 30.6 (Sutskever, Vinyals & Le 2014)."
        ),
    ),
    "sequential": Description(
        title="Sequential computation",
        claim=(
            "A recurrent layer needs O(n) sequential operations to read n positions, "
            "self-attention O(1): recurrence 'precludes parallelization within training "
            "examples', while a Transformer computes all positions at once, at O(n²·d) work per "
            "layer against the RNN's O(n·d²) (Vaswani et al. 2017)."
        ),
    ),
    "transformer_choices": Description(
        title="Transformer choices",
        claim=(
            "At a fixed model width, 4 to 16 attention heads give BLEU within about 0.4 of each "
            "other (one head is 0.9 worse); learned positional embeddings match the sinusoids "
            "(25.7 against 25.8 BLEU) (Vaswani et al. 2017). Post-LN (the paper) and pre-LN (the "
            "Annotated Transformer, ViT) blocks differ only in where the normalisation sits. A "
            "ViT's learned 1D position embeddings come to encode the 2D patch grid: nearby "
            "patches get similar embeddings (Dosovitskiy et al. 2020)."
        ),
    ),
    "visual_attention": Description(
        title="Visual attention looks where the word is",
        claim=(
            "Soft attention over the regions of a convolutional feature map, scored from the "
            "decoder's previous state, 'learns to fix its gaze on salient objects while "
            "generating the corresponding words'; its alignments 'correspond very strongly with "
            "human intuition' (Xu et al. 2015, Section 5.4, figures 2–5)."
        ),
    ),
    "conv_lstm": Description(
        title="Convolution keeps the spatial structure",
        claim=(
            "An LSTM whose input-to-state and state-to-state transitions are convolutions "
            "(ConvLSTM) predicts future frames better than the fully connected FC-LSTM: on Moving "
            "MNIST (10 frames in, 10 predicted), Shi et al. (2015, Table 1) report a test "
            "cross-entropy of 3670.85 for a three-layer ConvLSTM with 5×5 kernels (7,585,296 "
            "weights) against 4832.49 for the FC-LSTM-2048-2048 (142,667,776 weights), and "
            "4782.84 for a ConvLSTM whose state-to-state kernels are 1×1 (no spatial "
            "neighbourhood in the recurrence)."
        ),
    ),
}
