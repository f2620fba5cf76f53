/** Options every command takes (declared once in cli/main.ts, read by each command). */
export interface GlobalOptions {
  config?: string;
  strict?: boolean;
  json?: boolean;
  verbose?: boolean;
  revision?: string;
}
