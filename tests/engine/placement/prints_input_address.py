"""A correct tiny_relu candidate that prints where each call's input lies (placement_test.py)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        print(f"KFORGE_INPUT_AT={x.data_ptr()}", flush=True)
        return torch.relu(x)
