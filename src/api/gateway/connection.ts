import { Connection, type ConnectionOptions, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/**
 * A Temporal client connection that can be closed at any moment.
 *
 * The SDK's gRPC retry interceptor waits out its backoff on a timer that `Connection.close()` does not
 * clear, and closing the channel fails the calls still queued on it with UNAVAILABLE, which that
 * interceptor retries. A retry that fires after the close throws "Channel has been shut down" from the
 * timer, outside any caller's reach, and takes the process down (a known SDK defect, @temporalio/client
 * 1.24). `close()` here first stops new retries, then waits for the ones already scheduled (5 s at
 * most, the SDK's longest backoff), and only then closes the channel.
 */
export interface TemporalConnection {
  readonly connection: Connection;
  close(): Promise<void>;
}

/** Connects with the SDK's own retry policy, made safe to close (see TemporalConnection). */
export async function connectTemporal(options: Omit<ConnectionOptions, 'interceptors'>): Promise<TemporalConnection> {
  const sdk = defaultGrpcRetryOptions();
  let closing = false;
  /** When the last retry scheduled so far fires (epoch ms). */
  let lastRetryAt = 0;
  const interceptor = makeGrpcRetryInterceptor({
    retryableDecider: (attempt, status) => !closing && sdk.retryableDecider(attempt, status),
    delayFunction(attempt, status) {
      // The interceptor asks for the delay only when it is about to schedule the retry.
      const ms = sdk.delayFunction(attempt, status);
      lastRetryAt = Math.max(lastRetryAt, Date.now() + ms);
      return ms;
    },
  });
  const connection = await Connection.connect({ ...options, interceptors: [interceptor] });
  let closed: Promise<void> | undefined;
  return {
    connection,
    close() {
      closed ??= (async () => {
        closing = true;
        const wait = lastRetryAt - Date.now();
        // A timer set for later than every scheduled retry fires after them (Node orders timers by due time).
        if (wait >= 0) await new Promise((resolve) => setTimeout(resolve, wait + 1));
        await connection.close();
      })();
      return closed;
    },
  };
}
