import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The caller's bearer token for the MCP request being made right now. Connections are pooled and
 * shared by all users, so the token cannot live in the transport's fixed headers: the transport's
 * fetch reads it from here, and only for servers configured with `forwardUserToken: true`.
 */
export const userTokenContext = new AsyncLocalStorage<{ token: string }>();

export function withUserToken<T>(token: string | undefined, fn: () => Promise<T>): Promise<T> {
  return token ? userTokenContext.run({ token }, fn) : fn();
}

/** A fetch that adds `Authorization: Bearer <caller's token>` when a call carries one. */
export function forwardingFetch(base: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    const token = userTokenContext.getStore()?.token;
    if (!token) return base(input, init);
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return base(input, { ...init, headers });
  };
}
