/**
 * The index of sessions (docs/decisions/0033-session-protocol-floor.md): each session is the chain of
 * its turns, and this index holds the links, in order, so the API can name a new turn's predecessors
 * and list a caller's sessions without any workflow per turn. Ids and times only: what was said lives
 * in the turn workflows (encrypted there when payload keys are set), never here.
 *
 * Two stores: in memory for a single API replica (rebuilt from Temporal's visibility when the process
 * starts, see src/api/gateway/session-index.ts), PostgreSQL when POSTGRES_URL is set (pg-index.ts).
 *
 * The owner may title a session and delete it (docs/decisions/0037-renaming-and-deleting-sessions.md):
 * a deleted session stays in the index, marked, so the owner no longer sees it (not listed, no links,
 * no entry) and cannot add to it (`append` throws `SessionDeleted`); its turns stay in Temporal.
 */

export type Owner = { id: string; tenant: string };
export type LinkEnd = 'completed' | 'failed' | 'cancelled';

/** One message of a session: its turn and its place. */
export interface ChainLink {
  turnId: string;
  /** 0-based place in the session. */
  seq: number;
  /** When the API appended it (ISO 8601). */
  at: string;
  /** How the turn ended, once the API learned it. */
  ended?: LinkEnd;
}

export interface Appended {
  link: ChainLink;
  /** false: the turn was in the chain already (a retried request); `before` is what it had then. */
  created: boolean;
  /** The links before it, nearest first, at most the depth asked for. */
  before: ChainLink[];
}

export interface SessionEntry {
  sessionId: string;
  /** Its first message. */
  startedAt: string;
  /** Its latest message. */
  lastAt: string;
  turns: number;
  /** The owner's title, once set (checked by the API: SessionTitleBody of src/api/contract.ts). */
  title?: string;
}

/** Thrown by `append` to a session its owner deleted: its id takes no more messages. */
export class SessionDeleted extends Error {
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} was deleted`);
    this.name = 'SessionDeleted';
  }
}

/** Where a page of sessions ends: sessions whose latest message is older than (lastAt, sessionId). */
export interface SessionListCursor {
  lastAt: string;
  sessionId: string;
}

export interface SessionIndex {
  /**
   * Appends `turnId` as the session's newest link (the session begins with its first) unless it is in
   * the chain already; returns its link and the `depth` links before it. Two appends at once to one
   * session get two places, one after the other. A deleted session: `SessionDeleted`.
   */
  append(owner: Owner, sessionId: string, turnId: string, at: string, depth: number): Promise<Appended>;
  /** The newest `limit` links of the session, oldest first; none for a session it does not hold or that was deleted. */
  links(owner: Owner, sessionId: string, limit: number): Promise<ChainLink[]>;
  /** Records how a turn ended; the first word stays. */
  ended(owner: Owner, sessionId: string, turnId: string, status: LinkEnd): Promise<void>;
  /** The owner's sessions by their latest message, newest first: `limit` after `cursor`, and where the next page starts. */
  sessions(owner: Owner, limit: number, cursor?: SessionListCursor): Promise<{ sessions: SessionEntry[]; next?: SessionListCursor }>;
  /** The owner's session as the list shows it; `deleted` when its owner deleted it; undefined for one it does not hold. */
  session(owner: Owner, sessionId: string): Promise<(SessionEntry & { deleted?: true }) | undefined>;
  /** Sets the title of the owner's session (already trimmed and checked); undefined when it holds no such session, or it was deleted. */
  rename(owner: Owner, sessionId: string, title: string): Promise<SessionEntry | undefined>;
  /** Marks the owner's session deleted; false when it holds no such session, or it was deleted already. */
  remove(owner: Owner, sessionId: string): Promise<boolean>;
}

/** Orders sessions newest first: by latest message, then by id (a stable tie-break for the cursor). */
export function newerFirst(a: { lastAt: string; sessionId: string }, b: { lastAt: string; sessionId: string }): number {
  if (a.lastAt !== b.lastAt) return a.lastAt < b.lastAt ? 1 : -1;
  return a.sessionId < b.sessionId ? 1 : a.sessionId > b.sessionId ? -1 : 0;
}

const ownerKey = (owner: Owner): string => `${owner.tenant}\n${owner.id}`;

interface MemorySession {
  sessionId: string;
  links: ChainLink[];
  byTurn: Map<string, ChainLink>;
  title?: string;
  deleted?: true;
}

const entryOf = (s: MemorySession): SessionEntry => ({
  sessionId: s.sessionId,
  startedAt: (s.links[0] as ChainLink).at,
  lastAt: (s.links.at(-1) as ChainLink).at,
  turns: s.links.length,
  ...(s.title === undefined ? {} : { title: s.title }),
});

/**
 * The in-memory index: one API replica (each operation is synchronous inside, so appends are atomic).
 * Titles and deletions last as long as the process, like the rest of it.
 */
export function memorySessionIndex(): SessionIndex & { holds(owner: Owner, sessionId: string): boolean; restore(owner: Owner, sessionId: string, links: ChainLink[]): void } {
  const owners = new Map<string, Map<string, MemorySession>>();
  const sessionOf = (owner: Owner, sessionId: string, create: boolean): MemorySession | undefined => {
    let sessions = owners.get(ownerKey(owner));
    if (!sessions) {
      if (!create) return undefined;
      sessions = new Map();
      owners.set(ownerKey(owner), sessions);
    }
    let s = sessions.get(sessionId);
    if (!s && create) {
      s = { sessionId, links: [], byTurn: new Map() };
      sessions.set(sessionId, s);
    }
    return s;
  };
  const before = (s: MemorySession, seq: number, depth: number): ChainLink[] =>
    s.links.slice(Math.max(0, seq - depth), seq).reverse().map((l) => ({ ...l }));

  return {
    holds: (owner, sessionId) => Boolean(sessionOf(owner, sessionId, false)),

    /** Seeds a session it does not hold yet with links found elsewhere (Temporal's visibility), oldest first. */
    restore(owner, sessionId, links) {
      if (sessionOf(owner, sessionId, false)) return;
      const s = sessionOf(owner, sessionId, true) as MemorySession;
      links.forEach((l, seq) => {
        const link = { ...l, seq };
        s.links.push(link);
        s.byTurn.set(l.turnId, link);
      });
    },

    async append(owner, sessionId, turnId, at, depth) {
      const s = sessionOf(owner, sessionId, true) as MemorySession;
      if (s.deleted) throw new SessionDeleted(sessionId);
      const known = s.byTurn.get(turnId);
      if (known) return { link: { ...known }, created: false, before: before(s, known.seq, depth) };
      const link: ChainLink = { turnId, seq: s.links.length, at };
      s.links.push(link);
      s.byTurn.set(turnId, link);
      return { link: { ...link }, created: true, before: before(s, link.seq, depth) };
    },

    async links(owner, sessionId, limit) {
      const s = sessionOf(owner, sessionId, false);
      return s && !s.deleted && limit > 0 ? s.links.slice(-limit).map((l) => ({ ...l })) : [];
    },

    async ended(owner, sessionId, turnId, status) {
      const link = sessionOf(owner, sessionId, false)?.byTurn.get(turnId);
      if (link && !link.ended) link.ended = status;
    },

    async sessions(owner, limit, cursor) {
      const all = [...(owners.get(ownerKey(owner))?.values() ?? [])]
        .filter((s) => s.links.length > 0 && !s.deleted)
        .map(entryOf)
        .sort(newerFirst)
        .filter((s) => !cursor || newerFirst(cursor, s) < 0);
      const page = all.slice(0, limit);
      const last = page.at(-1);
      return all.length > limit && last ? { sessions: page, next: { lastAt: last.lastAt, sessionId: last.sessionId } } : { sessions: page };
    },

    async session(owner, sessionId) {
      const s = sessionOf(owner, sessionId, false);
      if (!s || s.links.length === 0) return undefined;
      return s.deleted ? { ...entryOf(s), deleted: true } : entryOf(s);
    },

    async rename(owner, sessionId, title) {
      const s = sessionOf(owner, sessionId, false);
      if (!s || s.deleted || s.links.length === 0) return undefined;
      s.title = title;
      return entryOf(s);
    },

    async remove(owner, sessionId) {
      const s = sessionOf(owner, sessionId, false);
      if (!s || s.deleted || s.links.length === 0) return false;
      s.deleted = true;
      return true;
    },
  };
}
