# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab stand-in for vLLM's ``vllm serve`` (distribution ``vllm``, console script ``vllm``).

No GPU and no model run here: it parses vLLM 0.30.0's flags, resolves the model in the Hugging Face cache as vLLM
does offline, forms the Ray placement group and worker actors of vLLM's RayExecutorV2, and serves vLLM's
OpenAI-compatible HTTP API with deterministic words. mp mode is the real engine's in the lab: the stand-in refuses
it. Python 3.8+ standard library only (``ray`` is imported in Ray mode only). See tests/lab/standins/README.md for
each behaviour and its source.
"""

__version__ = "0.30.0"  # the wheel's default version (tests/lab/sparklab/vllm_wheel.py DEFAULT_VERSION)
