import { fingerprintFrom } from "../../src/stack/fingerprint.js";

/** What the Python probe finds on a typical CUDA runner: Python 3.12, torch 2.11, Triton 3.6. */
export const TEST_PYTHON = {
  python: "3.12.3",
  implementation: "cpython",
  abi: "cpython-312-x86_64-linux-gnu",
  system: "linux",
  machine: "x86_64",
  packages: { torch: "2.11.0", triton: "3.6.0" },
  torchCuda: "12.8",
  torchHip: null,
};

/** A fixed software stack, so tests do not depend on this machine's Python. */
export const TEST_STACK = fingerprintFrom(
  TEST_PYTHON,
  { models: ["NVIDIA H200"], driver: "570.124.06", vendor: "nvidia", cann: null },
  {},
);
