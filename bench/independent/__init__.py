"""An independent generator of labelled failed-job log sets (see README.md).

Written from the upstream formats (PyTorch, NCCL, Slurm, Kubernetes, Linux, NVIDIA driver) without reading
firstfault's code, so that scoring firstfault on its output measures how it does on logs its authors did not
write. Nothing here imports firstfault.
"""
