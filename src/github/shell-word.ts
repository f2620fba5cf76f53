/** A word as POSIX sh reads it: bare when safe, else single-quoted (the generated pipelines' commands). */
export function shellWord(s: string): string {
  return /^[\w./@%+=:,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
