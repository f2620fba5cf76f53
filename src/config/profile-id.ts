/**
 * A profile's name as CI systems take it: the id of its jobs, workflow files and concurrency groups
 * (letters, digits, - and _), and the names derived from it for its other jobs.
 */
export function profileId(profile: string): string {
  return profile.replace(/[^A-Za-z0-9_-]/g, "-");
}

/** What each profile's id is extended with for its other jobs and files (the prewarms). */
const DERIVED = ["", "-prewarm", "-cpu-prewarm"];

/**
 * Pairs of profiles whose CI files, jobs or concurrency groups would share a name: the same id, or
 * one's id a derived name of the other's, compared in any case (GitHub compares groups so).
 */
export function clashingProfiles(names: string[]): [string, string, string][] {
  const owner = new Map<string, string>();
  const clashes: [string, string, string][] = [];
  for (const name of names)
    for (const suffix of DERIVED) {
      const taken = `${profileId(name)}${suffix}`.toLowerCase();
      const other = owner.get(taken);
      if (other === undefined) owner.set(taken, name);
      else if (other !== name && !clashes.some(([a, b]) => a === other && b === name))
        clashes.push([other, name, taken]);
    }
  return clashes;
}
