// Errors on the page, kept for the end-to-end tests (and anyone with devtools closed):
// script errors, rejected promises, console.error and every Content-Security-Policy violation.
// Loaded first, as a file: the page's policy allows no inline script.
window.__tokscope_errors = [];
addEventListener("error", (e) => __tokscope_errors.push(String(e.message)));
addEventListener("unhandledrejection", (e) => __tokscope_errors.push(String(e.reason)));
addEventListener("securitypolicyviolation", (e) =>
  __tokscope_errors.push(`CSP violation: ${e.effectiveDirective} blocked ${e.blockedURI || "inline code"}`));
const consoleError = console.error;
console.error = (...a) => { __tokscope_errors.push(a.map(String).join(" ")); consoleError(...a); };
// Main-thread tasks over 50 ms (the page must stay responsive while the worker decodes).
window.__tokscope_longtasks = [];
try {
  new PerformanceObserver((l) => l.getEntries().forEach((e) =>
    __tokscope_longtasks.push({ start: e.startTime, duration: e.duration }))
  ).observe({ type: "longtask", buffered: true });
} catch (_) { /* no Long Tasks API: nothing recorded */ }
