/** One entry's identity across caches: its cache's name and its name in that cache. */
export function entryId(e: { cache: string; name: string }): string {
  return `${e.cache}\0${e.name}`;
}
