// The translation unit that owns the shared precompiled <torch/torch.h> (cmake/DeepkfTorchPch.cmake).
