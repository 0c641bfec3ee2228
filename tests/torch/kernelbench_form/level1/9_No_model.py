import torch


def forward(x):
    return x * 2


def get_inputs():
    return [torch.rand(16)]


def get_init_inputs():
    return []
