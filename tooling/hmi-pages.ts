// What an open HMI page asks of the daemon, without a browser: the page's files once, the live
// stream (Server-Sent Events: the view, the health view, the events) read as it comes, and two
// trends every 5 s, as agent/hmi/static/hmi.js does. For benches that load the daemon with pages
// (a browser's own rendering costs the client's CPU, not the daemon's).
export interface HmiPages {
  /** live views received over all pages */
  views(): number;
  stop(): Promise<void>;
}

export async function openHmiPages(base: string, n: number): Promise<HmiPages> {
  const controllers: AbortController[] = [];
  const timers: NodeJS.Timeout[] = [];
  let views = 0;
  const get = async (path: string, signal: AbortSignal): Promise<void> => {
    const r = await fetch(base + path, { signal, headers: { "accept-encoding": "gzip" } });
    await r.arrayBuffer();
  };
  for (let i = 0; i < n; i++) {
    const ac = new AbortController();
    controllers.push(ac);
    for (const f of ["", "hmi.js", "hmi.css", "uplot.js", "uplot.css"]) await get(f, ac.signal);
    const live = await fetch(`${base}api/live`, { signal: ac.signal });
    if (live.status !== 200 || live.body === null) throw new Error(`page ${i}: /api/live answered ${live.status}`);
    const reader = live.body.getReader();
    void (async () => {
      const text = new TextDecoder();
      for (;;) {
        const chunk: { done: boolean; value?: Uint8Array } = await reader.read().catch(() => ({ done: true }));
        if (chunk.done || chunk.value === undefined) return;
        views += (text.decode(chunk.value).match(/^event: state$/gm) ?? []).length;
      }
    })();
    const quiet = (p: Promise<void>): void => void p.catch(() => undefined);
    timers.push(setInterval(() => quiet(get("api/trend?series=rack-1.valve&series=rack-1.returnTempC", ac.signal)), 5000));
  }
  return {
    views: () => views,
    stop: async () => {
      for (const t of timers) clearInterval(t);
      for (const ac of controllers) ac.abort();
      await new Promise((r) => setTimeout(r, 50));
    },
  };
}
