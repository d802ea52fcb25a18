/** A logger for the SDK's workflow bundler and replayer that says nothing: a failing test reports what matters. */
export const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
