"""Reference facts about the GPU types the leaderboard measured on, each with its source."""

from __future__ import annotations

from typing import Any

GPU_FACTS: dict[str, dict[str, Any]] = {
    "H100": {
        "full_name": "NVIDIA H100 SXM5 80GB HBM3",
        "architecture": "Hopper",
        "memory_gb": 80.0,
        "tdp_watts": 700.0,
        "source": "NVIDIA H100 Tensor Core GPU datasheet: SXM form factor, 80 GB HBM3, "
        "max thermal design power up to 700 W",
        "source_url": "https://www.nvidia.com/en-us/data-center/h100/",
    },
    "B200": {
        "full_name": "NVIDIA B200 (HGX B200, SXM)",
        "architecture": "Blackwell",
        "memory_gb": 180.0,
        "tdp_watts": 1000.0,
        "source": "NVIDIA HGX B200 specifications: 8 GPUs with 1,440 GB HBM3e in total "
        "(180 GB each), up to 1,000 W per GPU",
        "source_url": "https://www.nvidia.com/en-us/data-center/hgx/",
    },
}


def gpu_facts(name: str) -> dict[str, Any] | None:
    return GPU_FACTS.get(name)
