# kforge: dialect=kernelbench
"""A candidate for tiny_relu that computes out of place on its first six calls (the engine's
five correctness trials and the first warm-up call) and, on calls 7 to 12, which only the
timing stage makes, in place into its input, returning the input: right values, no output
allocation. From call 13 on, the post-timing check included, it is out of place again. An
engine that checks only the timed outputs' values passes it. Two rules apply (as to
examples/hacks/mutates_input.py in the trials): the input changed, and the output is the
input; the engine checks the inputs first.
Expected verdict: rejected, rule input_mutation."""
import torch.nn as nn


class ModelNew(nn.Module):
    IN_PLACE = range(7, 13)  # calls only the timing stage makes

    def __init__(self):
        super().__init__()
        self.n = 0

    def forward(self, x):
        self.n += 1
        out = x if self.n in self.IN_PLACE else x.clone()
        return out.clamp_(min=0.0)
