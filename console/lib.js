// What every page of the console shares: htm bound to Preact, the API client, polling, the clock.
import { h } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

/** The JWT's claims, for showing who is signed in (the API verifies the token; this only reads it). */
export function claimsOf(token) {
  try {
    return JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
  } catch {
    return {};
  }
}

/** `api(method, route, body?)`: JSON in and out; an error's message is the API's own. */
export function useApi(token, onUnauthorized) {
  return useCallback(
    async (method, route, body, headers = {}) => {
      const res = await fetch(route, {
        method,
        headers: { ...headers, authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = await res.json().catch(() => ({}));
      if (res.status === 401) onUnauthorized(json.error?.message ?? 'The token was refused.');
      if (!res.ok) throw Object.assign(new Error(json.error?.message ?? `HTTP ${res.status}`), { status: res.status });
      return json;
    },
    [token, onUnauthorized],
  );
}

export function usePolled(api, route, everyMs) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const load = useCallback(() => api('GET', route).then((d) => (setData(d), setError(null)), (e) => setError(e.message)), [api, route]);
  useEffect(() => {
    load();
    const timer = setInterval(load, everyMs);
    return () => clearInterval(timer);
  }, [load, everyMs]);
  return { data, error, reload: load };
}

/** The time now, renewed every `everyMs` while `active` (a countdown's clock). */
export function useNow(active, everyMs = 1000) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return undefined;
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [active, everyMs]);
  return now;
}

/** `1:05` for 65 000 ms (never below zero). */
export function countdown(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export const timeOf = (iso) => new Date(iso).toLocaleTimeString();
