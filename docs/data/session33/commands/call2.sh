#!/usr/bin/env bash
# Session 33, call 2 (280 s, an H100): the corpus through the worker, session 31's call 3 as it
# is (it ran as a copy with its scratch directory /tmp/s33, committed in afc17af). Build the
# bundle first (bash scripts/gpu_carry.sh && bash scripts/gpu_cluster_bundle.sh build) and carry
# .gpu-carry/kernelbench, corpora, kb_harness, googletest and cluster.
exec bash docs/data/session31/commands/call3.sh
