/** A scripted model for workflow tests: answers each request with `answer`, and keeps the requests it was sent. */
import type { LlmClient } from '../../src/llm/provider';
import type { LlmRequest, LlmResponse } from '../../src/shared/turn';

export function scriptedModel(model: string, answer: (req: LlmRequest) => LlmResponse): LlmClient & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  return {
    provider: 'openai',
    model,
    endpoint: 'scripted',
    requests,
    complete: async (req) => {
      requests.push(req);
      return answer(req);
    },
  };
}
