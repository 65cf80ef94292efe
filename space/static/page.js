// The page's scripts (Foresight Bench Space). app.py puts this file in the page head once;
// the Python side only calls these functions (window.fs.*) with data, never builds code.
window.fs = (() => {
  // the address the visitor opened, kept before the page's own first tab selection rewrites
  // it, so a permalink's ?tab= survives loading
  const query = window.location.search;
  const help = {};
  let restored = false;

  // a header's explanation: matched on its text, its end for '... 95% CI', or its start
  const helpFor = (text) => {
    const t = text.trim();
    if (help[t]) return help[t];
    if (t.endsWith("95% CI")) return help["95% CI"];
    for (const k of Object.keys(help)) {
      if (k.length > 2 && t.startsWith(k)) return help[k];
    }
    return null;
  };

  // give every table header its explanation as a hover tooltip, as tables (re)render
  const watchHeaders = () => {
    let queued = false;
    const apply = () => {
      queued = false;
      document.querySelectorAll("thead th").forEach((th) => {
        const t = helpFor(th.innerText || "");
        if (t) {
          th.title = t;
          th.querySelectorAll("[title]").forEach((e) => { e.title = t; });
        }
      });
    };
    new MutationObserver(() => {
      if (!queued) { queued = true; requestAnimationFrame(apply); }
    }).observe(document.documentElement, { childList: true, subtree: true });
  };

  return {
    // add header explanations (label -> text)
    addHelp(more) { Object.assign(help, more); return []; },

    // before a change callback: write the controls' values into the URL (a value at its
    // default is removed), so the address bar is always a permalink; returns the values
    writeUrl(keys, defaults, args) {
      const u = new URL(window.location.href);
      keys.forEach((k, i) => {
        let v = args[i];
        if (Array.isArray(v)) v = v.join(",");
        if (v === null || v === undefined || v === "" || v === defaults[i]) u.searchParams.delete(k);
        else u.searchParams.set(k, v);
      });
      window.history.replaceState(null, "", u);
      return args;
    },

    // when a tab is selected: record it in the URL (?tab=), once the permalink the page was
    // opened with has been applied
    recordTab(id) {
      if (!restored) return;
      const u = new URL(window.location.href);
      u.searchParams.set("tab", id);
      window.history.replaceState(null, "", u);
    },

    // on page load: select the tab named by ?tab= (or Browse when only ?id= is given) by
    // clicking its button once the page has mounted; labels: tab id -> its button's label
    openTab(labels) {
      const q = new URLSearchParams(query);
      const t = q.get("tab") || (q.get("id") ? "browse" : null);
      if (!t || !labels[t]) { restored = true; return []; }
      const go = (n) => {
        const b = [...document.querySelectorAll("button[role=tab]")]
          .find((x) => x.innerText.trim() === labels[t]);
        if (b) { restored = true; b.click(); }
        else if (n > 0) setTimeout(() => go(n - 1), 100);
      };
      go(50);
      return [];
    },

    watchHeaders,
  };
})();
window.fs.watchHeaders();
