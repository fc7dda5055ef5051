"""Training workers and TRL/PEFT runners. The only subpackage allowed to import torch, trl, peft or vllm."""
