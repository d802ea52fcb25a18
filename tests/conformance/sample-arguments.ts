/** What a model would send a conformance test server: arguments that satisfy its tool's input schema well enough. */
export function sampleArguments(schema: { properties?: Record<string, { type?: string }> } | undefined): Record<string, unknown> {
  let n = 1;
  return Object.fromEntries(
    Object.entries(schema?.properties ?? {}).map(([name, p]) => {
      const type = p.type ?? 'string';
      return [name, type === 'number' || type === 'integer' ? n++ : type === 'boolean' ? true : type === 'object' ? {} : type === 'array' ? [] : 'test'];
    }),
  );
}
