/**
 * The verified caller (from the JWT: `sub`, `role`, `tenant_id`, `scopes`). Travels in workflow input
 * and history: plain JSON, never the token itself. Validated where it enters (src/config/policy.ts).
 */
export interface UserContext {
  /** The JWT `sub`. */
  id: string;
  role: string;
  /** The JWT `tenant_id`. */
  tenant: string;
  scopes: string[];
}
