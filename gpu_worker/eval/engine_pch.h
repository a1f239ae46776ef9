// Precompiled header for the engine: the LibTorch and pybind11 headers dominate build time.
#include <ATen/ATen.h>
#include <pybind11/embed.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>
