// The page's only script and style sheet, served from the console's own origin (the page's
// Content-Security-Policy allows nothing else). The script swaps in the server-rendered panels,
// escaped on the server, every few seconds; with scripts off the page is still whole.

export const CONSOLE_SCRIPT = `'use strict';
(() => {
  const main = document.getElementById('panels');
  const stamp = document.getElementById('refreshed');
  if (!main) return;
  const every = Math.max(250, Number(main.dataset.refreshMs) || 2000);
  let busy = false;
  const refresh = async () => {
    if (busy) return;
    busy = true;
    try {
      const res = await fetch('panels', { cache: 'no-store', credentials: 'same-origin' });
      if (res.ok) {
        main.innerHTML = await res.text();
        if (stamp) stamp.textContent = new Date().toLocaleTimeString();
        document.body.dataset.state = 'live';
      } else {
        document.body.dataset.state = 'stale';
      }
    } catch {
      document.body.dataset.state = 'stale';
    } finally {
      busy = false;
    }
  };
  setInterval(refresh, every);
})();
`;

export const CONSOLE_STYLE = `:root { color-scheme: light dark; --muted: #777; --line: #8884; --warn: #c60; --bad: #c22; --good: #282; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 1rem 1.5rem; }
header { display: flex; flex-wrap: wrap; gap: .25rem 1.5rem; align-items: baseline; border-bottom: 1px solid var(--line); margin-bottom: .5rem; }
header h1 { font-size: 1.25rem; margin: .25rem 0; }
header span, .muted { color: var(--muted); }
body[data-state=stale] header::after { content: 'not refreshing'; color: var(--bad); }
section { margin: 1rem 0 1.5rem; }
h2 { font-size: 1.05rem; margin: 0 0 .4rem; }
h3 { font-size: .95rem; margin: .8rem 0 .3rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .2rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
th { font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: var(--good); } .warn { color: var(--warn); } .bad { color: var(--bad); }
progress { width: 10rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
`;

export const CONSOLE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#6492fe"/><path d="M4 4h8L4 12h8" stroke="#fff" stroke-width="2" fill="none"/></svg>`;
