/**
 * The API docs (`/docs`, Swagger UI) signed in with the console's token, so "Try it out" needs no
 * second sign-in. The console opens the docs as its own child window, and a browser copies the
 * opener's sessionStorage (where the console keeps its token) into it; failing that, the script asks
 * the opener, which is the same origin. The token stays in sessionStorage (never localStorage, never
 * the URL). Served as a Swagger UI theme script: it runs after swagger-initializer.js is loaded and
 * before it runs, and wraps `SwaggerUIBundle` to authorize the bearer scheme once the document loaded.
 */

/** Where console/app.js keeps its token in sessionStorage (`TOKEN_KEY` there). */
const CONSOLE_TOKEN_KEY = 'dmh.token';

/** The script, authorizing the security scheme `scheme` (the document's bearer scheme). */
export const consoleTokenScript = (scheme: string): string => `(function () {
  var KEY = ${JSON.stringify(CONSOLE_TOKEN_KEY)};
  function token() {
    try {
      return sessionStorage.getItem(KEY) || (window.opener && window.opener.sessionStorage.getItem(KEY)) || null;
    } catch (e) {
      return null;
    }
  }
  var original = window.SwaggerUIBundle;
  if (typeof original !== 'function') return;
  window.SwaggerUIBundle = Object.assign(function (config) {
    var ui;
    var onComplete = config.onComplete;
    ui = original(Object.assign({}, config, {
      onComplete: function () {
        var t = token();
        if (t) ui.preauthorizeApiKey(${JSON.stringify(scheme)}, t);
        if (typeof onComplete === 'function') onComplete.apply(this, arguments);
      },
    }));
    return ui;
  }, original);
})();
`;
