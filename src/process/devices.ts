/** The variables that pick visible accelerators, for NVIDIA, Ascend and AMD alike. */
export const DEVICE_VARIABLES = [
  "CUDA_VISIBLE_DEVICES",
  "ASCEND_RT_VISIBLE_DEVICES",
  "HIP_VISIBLE_DEVICES",
] as const;

/** Environment additions that make only `devices` visible to a command. */
export function deviceEnv(devices: string[]): Record<string, string> {
  const value = devices.join(",");
  return Object.fromEntries(DEVICE_VARIABLES.map((v) => [v, value]));
}
