/* agentledger console (issue 25): the pages under /console/ on `agentledger serve`'s own port.

Plain ES2020, no framework and no build step. Everything it shows comes from the console's
same-origin JSON (the API's own answers, the state machine's definition and the executions'
histories), and every piece of text is rendered with textContent: the request, test names and a
model's rationale are untrusted. For the same reason, control and format characters in any text
shown are escaped first (`visible`). Lists are capped so a run of ten thousand files renders fast. */
'use strict';

(() => {
  const POLL_MS = 2000;
  const COMPLETE_POLL_MS = 10000; // a complete run changes no more; its evidence "now" still may
  const HISTORY_IDLE_MS = 10000; // a run that is not moving: its executions' histories less often
  const MAX_ROWS = 500;
  const TEXT_LIMIT = 200 * 1024;
  const IO_LIMIT = 20 * 1024;
  const DIFF_LINE_LIMIT = 3000;
  const CSRF_HEADER = 'X-CSRF-Token';
  const SVG_NS = 'http://www.w3.org/2000/svg';
  // RunStatus's values (agentledger/states.py), in the order the run list offers them; a unit test
  // checks the two agree.
  const RUN_STATUSES = ['running', 'awaiting_review', 'needs_person', 'complete', 'cancelled'];
  const RUN_STATUS = {
    running: ['●', 'running'],
    awaiting_review: ['◷', 'awaiting review'],
    needs_person: ['⚑', 'needs a person'],
    complete: ['✓', 'complete'],
    cancelled: ['⊘', 'cancelled'],
  };
  // What a state of the graph did, in the order the legend lists them. Never colour alone.
  const STATE_STATUS = {
    succeeded: ['✓', 'succeeded'],
    failed: ['✗', 'failed'],
    retried: ['↻', 'retried'],
    skipped: ['⤼', 'skipped on resume'],
    waiting: ['◷', 'waiting'],
    unreached: ['–', 'not reached'],
  };
  const STATE_STATUS_LONG = {
    succeeded: 'succeeded',
    failed: 'failed (its error was caught, or the execution stopped in it)',
    retried: 'retried: an attempt failed, a later one succeeded',
    skipped: 'skipped on resume: complete with valid evidence, not run again',
    waiting: 'waiting: entered and not left, in a running execution',
    unreached: 'not reached by any execution of this run',
  };
  const EVIDENCE_ICON = {valid: '✓', stale: '✗', missing: '–', unknown: '?'};
  const EFFECT_ICON = {confirmed: '✓', intended: '…', attempted: '…', unconfirmed: '?', failed: '✗'};

  const app = {session: null, gen: 0, asl: null, page: null};

  // -- DOM ----------------------------------------------------------------------------------------
  // Control characters (but newline and tab) and format characters (bidi overrides and isolates,
  // zero-width characters), as the CLI shows them (agentledger/hidden_text.py): raw, they would
  // reorder or hide what a reviewer reads (Trojan Source).
  const HIDDEN = /[\p{Cc}\p{Cf}]/gu;
  // Attributes a person reads (a tooltip, what a screen reader says); the others are never shown.
  const READ_ATTRIBUTES = new Set(['title', 'aria-label', 'placeholder']);

  function escapeOf(character) {
    const code = character.codePointAt(0);
    if (code < 0x100) return `\\x${code.toString(16).padStart(2, '0')}`;
    return code < 0x10000 ? `\\u${code.toString(16).padStart(4, '0')}` : `\\U${code.toString(16).padStart(8, '0')}`;
  }

  function visible(text) {
    return String(text).replace(HIDDEN, (c) => (c === '\n' || c === '\t' ? c : escapeOf(c)));
  }

  function props(el, attrs) {
    if (!attrs) return el;
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') el.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
      else if (key === 'text') el.textContent = visible(value);
      else if (key === 'dataset') for (const [k, v] of Object.entries(value)) el.dataset[k] = String(v);
      else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? '' : READ_ATTRIBUTES.has(key) ? visible(value) : String(value));
    }
    return el;
  }

  function kids(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(visible(child)));
    }
    return el;
  }

  const h = (tag, attrs, ...children) => kids(props(document.createElement(tag), attrs), children);
  const s = (tag, attrs, ...children) => kids(props(document.createElementNS(SVG_NS, tag), attrs), children);
  const $ = (selector) => document.querySelector(selector);

  function announce(text) {
    const box = $('#announce');
    if (box) box.textContent = visible(text);
  }

  function safeUrl(url) {
    if (typeof url !== 'string' || !url) return null;
    try {
      const parsed = new URL(url, location.href);
      return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
    } catch (error) {
      return null;
    }
  }

  function link(url, text, attrs) {
    const href = safeUrl(url);
    if (!href) return h('span', {class: 'mono'}, text || url || '');
    return h('a', {href, rel: 'noopener noreferrer', target: '_blank', ...(attrs || {})}, text || href);
  }

  function badge(kind, icon, text, attrs) {
    return h('span', {class: `badge s-${kind}`, ...(attrs || {})}, h('span', {'aria-hidden': 'true'}, icon), ' ', text);
  }

  function runBadge(status) {
    const [icon, text] = RUN_STATUS[status] || ['?', status];
    return badge(status, icon, text, {dataset: {status}});
  }

  function stateBadge(status) {
    const [icon, text] = STATE_STATUS[status] || ['?', status];
    return badge(status, icon, text);
  }

  function more(total, shown, what) {
    return total > shown ? h('p', {class: 'more'}, `… and ${total - shown} more ${what} (not shown)`) : null;
  }

  /** Replace an element's content, keeping keyboard focus on the element with the same key. */
  function refill(el, build) {
    const active = document.activeElement;
    const key = active && el.contains(active) ? active.dataset && active.dataset.focusKey : null;
    el.replaceChildren(...[build()].flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false && c !== ''));
    if (key) {
      const again = Array.from(el.querySelectorAll('[data-focus-key]')).find((node) => node.dataset.focusKey === key);
      if (again) again.focus({preventScroll: true});
    }
  }

  // -- formatting ---------------------------------------------------------------------------------
  function parseTime(value) {
    if (value === null || value === undefined || value === '') return NaN;
    if (typeof value === 'number') return value > 1e12 ? value : value * 1000;
    return Date.parse(String(value).trim().replace(' ', 'T').replace(/(\.\d{3})\d+/, '$1'));
  }

  function clock(ms) {
    if (!Number.isFinite(ms)) return '—';
    const d = new Date(ms);
    const pad = (n, w = 2) => String(n).padStart(w, '0');
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  function when(value) {
    const ms = parseTime(value);
    if (!Number.isFinite(ms)) return '—';
    const d = new Date(ms);
    const today = new Date();
    const date = d.toDateString() === today.toDateString() ? '' : `${d.toISOString().slice(0, 10)} `;
    return `${date}${clock(ms)}`;
  }

  function timeEl(value) {
    const ms = parseTime(value);
    return h('time', {datetime: Number.isFinite(ms) ? new Date(ms).toISOString() : null,
      title: Number.isFinite(ms) ? new Date(ms).toISOString() : null}, when(value));
  }

  function duration(ms) {
    if (!Number.isFinite(ms) || ms < 0) return '—';
    if (ms < 1000) return `${Math.round(ms)} ms`;
    const sec = ms / 1000;
    if (sec < 60) return `${sec.toFixed(sec < 10 ? 1 : 0)} s`;
    const min = Math.floor(sec / 60);
    if (min < 60) return `${min} min ${Math.round(sec % 60)} s`;
    const hours = Math.floor(min / 60);
    if (hours < 48) return `${hours} h ${min % 60} min`;
    return `${Math.floor(hours / 24)} d ${hours % 24} h`;
  }

  function ago(value) {
    const ms = parseTime(value);
    if (!Number.isFinite(ms)) return '—';
    const diff = Date.now() - ms;
    return diff < 5000 ? 'just now' : `${duration(diff).replace(/ \d+ (s|min|h)$/, '')} ago`;
  }

  function bytes(n) {
    if (!Number.isFinite(n)) return '—';
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
    return `${(n / 1024 / 1024).toFixed(1)} MB`;
  }

  function who(arn) {
    if (!arn) return 'the workflow';
    const tail = String(arn).split('/').pop();
    return tail || String(arn);
  }

  function actor(arn, nobody) {
    if (!arn && nobody) return h('span', {class: 'muted'}, nobody);
    return h('span', {title: arn || 'decided by the workflow itself'}, who(arn));
  }

  function shortDigest(digest) {
    const text = String(digest || '');
    const hex = text.replace(/^sha256:/, '');
    return hex.length > 16 ? `${text.startsWith('sha256:') ? 'sha256:' : ''}${hex.slice(0, 12)}…` : text;
  }

  function shortExec(name, runId) {
    return runId && name.startsWith(`${runId}-`) ? name.slice(runId.length + 1) : name;
  }

  function parseJSON(text) {
    if (typeof text !== 'string') return text && typeof text === 'object' ? text : null;
    try {
      return JSON.parse(text);
    } catch (error) {
      return null;
    }
  }

  /** Pretty-printed JSON (or the text as it is), at most `limit` characters, with a note when cut. */
  function bounded(text, limit) {
    let shown = typeof text === 'string' ? text : JSON.stringify(text, null, 2);
    const parsed = typeof text === 'string' ? parseJSON(text) : null;
    if (parsed !== null && typeof parsed === 'object') shown = JSON.stringify(parsed, null, 2);
    if (shown === undefined || shown === null) shown = '';
    if (shown.length <= limit) return {text: shown, note: null};
    return {text: shown.slice(0, limit),
      note: `showing the first ${bytes(limit)} of ${bytes(shown.length)}; the rest is cut`};
  }

  function preBlock(value, limit, label) {
    const {text, note} = bounded(value, limit);
    return [h('pre', {class: 'block', tabindex: 0, 'aria-label': label || null}, text),
      note ? h('p', {class: 'muted small'}, note) : null];
  }

  // -- HTTP ---------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `HTTP ${status}`);
      this.status = status;
      this.body = body || {};
    }
  }

  async function call(method, path, body) {
    const headers = {Accept: 'application/json'};
    if (method !== 'GET') {
      headers['Content-Type'] = 'application/json';
      if (app.session) headers[CSRF_HEADER] = app.session.csrf;
    }
    const response = await fetch(path, {method, headers, credentials: 'same-origin', cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body)});
    const text = await response.text();
    let data = null;
    if (text) {
      data = parseJSON(text);
      if (data === null) data = {message: text.slice(0, 1000)};
    }
    if (response.status === 401) {
      signedOut(data && data.message);
      throw new ApiError(401, data);
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  /** Runs `fn` now and again `ms` (a number, or a function giving one) after each run ends, until the
   * page changes; wake() runs it now. */
  function poll(gen, fn, ms) {
    let timer = null;
    let busy = false;
    let again = false;
    const tick = async () => {
      timer = null;
      if (gen !== app.gen) return;
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      try {
        await fn();
      } catch (error) {
        if (error && error.status === 401) return;
        if (error && error.stop) return;
        console.warn('console poll:', error);
      } finally {
        busy = false;
      }
      if (gen !== app.gen) return;
      if (again) {
        again = false;
        tick();
        return;
      }
      timer = setTimeout(tick, typeof ms === 'function' ? ms() : ms);
    };
    tick();
    return {wake() {
      if (timer) clearTimeout(timer);
      tick();
    }};
  }

  // -- session and routing ------------------------------------------------------------------------
  function renderWho() {
    const box = $('#who');
    if (!box) return;
    if (!app.session) {
      box.replaceChildren();
      return;
    }
    const {duty, principal} = app.session;
    box.replaceChildren(
      h('span', {id: 'signed-in-as', title: `This session ends at ${when(app.session.expires_at)}`},
        'Signed in as the ', h('span', {class: 'duty'}, duty)),
      h('span', {class: 'arn', title: principal}, who(principal)),
      h('button', {type: 'button', id: 'sign-out', onclick: signOut}, 'Sign out'));
  }

  async function signOut() {
    try {
      await call('POST', '/console/signout');
      signedOut(null, true);
    } catch (error) {
      if (error.status !== 401) announce(`Could not sign out: ${error.message}`);
    }
  }

  function signedOut(message, byUser) {
    app.gen += 1;
    app.session = null;
    app.page = null;
    renderWho();
    const main = $('#main');
    main.replaceChildren(h('section', {class: 'card sign-in', id: 'sign-in', 'aria-labelledby': 'sign-in-h'},
      h('h1', {id: 'sign-in-h'}, byUser ? 'Signed out' : 'Sign in'),
      h('p', null, 'Sign in with a link ', h('code', null, 'agentledger serve'), ' printed.'),
      h('p', {class: 'muted'}, 'When it starts, serve prints one link for each local principal (requester, reviewer, ' +
        'operator). Each link signs in once; restart serve for new ones. The CLI needs no sign-in.'),
      message && !byUser ? h('p', {class: 'muted small'}, `The server said: ${message}`) : null));
    document.title = 'Sign in · agentledger console';
  }

  function parseRoute() {
    const raw = location.hash.replace(/^#/, '') || '/';
    const at = raw.indexOf('?');
    const path = at >= 0 ? raw.slice(0, at) : raw;
    const params = new URLSearchParams(at >= 0 ? raw.slice(at + 1) : '');
    if (path === '/' || path === '') return {name: 'runs', status: params.get('status') || ''};
    const match = path.match(/^\/runs\/([A-Za-z0-9_.-]{1,100})(?:\/(artifact))?\/?$/);
    if (match) return {name: 'run', runId: match[1], artifact: match[2] ? params.get('key') : null};
    return {name: 'missing', path};
  }

  function onRoute() {
    if (!app.session) return;
    const route = parseRoute();
    // Opening an artifact of the run on screen keeps the page (and what is typed in it).
    if (route.name === 'run' && app.page && app.page.runId === route.runId) {
      if (route.artifact) app.page.openArtifact(route.artifact, true);
      else if (app.page.viewer) app.page.viewer.hidden = true;
      return;
    }
    app.gen += 1;
    app.page = null;
    const main = $('#main');
    if (route.name === 'runs') showRuns(route);
    else if (route.name === 'run') showRun(route);
    else {
      main.replaceChildren(h('section', {class: 'card'}, h('h1', null, 'Not found'),
        h('p', null, 'No console page at this address. ', h('a', {href: '#/'}, 'All runs'))));
    }
    main.focus({preventScroll: true});
  }

  async function start() {
    try {
      app.session = await call('GET', '/console/session');
    } catch (error) {
      if (error.status !== 401) {
        $('#main').replaceChildren(h('p', {class: 'notice error', role: 'alert'}, `The console could not start: ${error.message}`));
      }
      return;
    }
    renderWho();
    window.addEventListener('hashchange', onRoute);
    onRoute();
  }

  // -- the runs list ------------------------------------------------------------------------------
  function runsTable(runs, caption, emptyText) {
    if (!runs.length) return h('p', {class: 'muted'}, emptyText);
    const shown = runs.slice(0, MAX_ROWS);
    return [h('div', {class: 'table-wrap'}, h('table', {class: 'runs'},
      h('caption', {class: 'visually-hidden'}, caption),
      h('thead', null, h('tr', null, ['Run', 'Status', 'Stage', 'Request', 'Requested by', 'Updated', 'Executions']
        .map((name) => h('th', {scope: 'col'}, name)))),
      h('tbody', null, shown.map((run) => h('tr', {dataset: {runId: run.run_id, status: run.status}},
        h('td', null, h('a', {class: 'run-link', href: `#/runs/${encodeURIComponent(run.run_id)}`,
          dataset: {focusKey: `run:${run.run_id}`}}, run.run_id)),
        h('td', null, runBadge(run.status)),
        h('td', null, run.state),
        h('td', {class: 'request', title: run.request}, run.request),
        h('td', null, actor(run.requested_by, '—')),
        h('td', {title: run.updated_at}, ago(run.updated_at)),
        h('td', {class: 'num'}, `${(run.executions || []).length}${run.resumes ? ` (${run.resumes} resumed)` : ''}`)))))),
    more(runs.length, shown.length, 'runs')];
  }

  function showRuns(route) {
    const gen = app.gen;
    const reviewer = app.session.duty === 'reviewer';
    document.title = 'Runs · agentledger console';
    const filter = h('select', {id: 'status-filter', 'aria-label': 'Show runs with status'},
      h('option', {value: ''}, 'All statuses'),
      RUN_STATUSES.map((status) => h('option', {value: status}, RUN_STATUS[status][1])));
    filter.value = RUN_STATUSES.includes(route.status) ? route.status : '';
    filter.addEventListener('change', () => {
      location.hash = filter.value ? `#/?status=${encodeURIComponent(filter.value)}` : '#/';
    });
    const live = h('span', {class: 'live', id: 'runs-live'}, 'loading…');
    const attentionBody = h('div');
    const attention = h('section', {class: 'card attention', id: 'needs-person', 'aria-labelledby': 'needs-h', hidden: true},
      h('h2', {id: 'needs-h'}, reviewer ? 'Needs a person or your review' : 'Needs a person'), attentionBody);
    const listBody = h('div');
    const loadMore = h('button', {type: 'button', id: 'load-more', hidden: true}, 'Load more');
    const title = filter.value ? `Runs ${RUN_STATUS[filter.value][1]}` : 'All runs';
    const list = h('section', {class: 'card', id: 'runs', 'aria-labelledby': 'runs-h'},
      h('div', {class: 'card-head'}, h('h2', {id: 'runs-h'}, title), h('span', {class: 'muted small'}, 'newest first')),
      listBody, h('div', {class: 'actions'}, loadMore));
    $('#main').replaceChildren(
      h('div', {class: 'toolbar'}, h('h1', null, 'Runs'),
        h('label', {for: 'status-filter'}, 'Status '), filter, live),
      attention, list);

    let pages = 1;
    let signatures = {};
    const controller = poll(gen, async () => {
      const query = (cursor) => {
        const params = new URLSearchParams({limit: '50'});
        if (filter.value) params.set('status', filter.value);
        if (cursor) params.set('cursor', cursor);
        return `/console/api/runs?${params}`;
      };
      const wanted = ['needs_person', ...(reviewer ? ['awaiting_review'] : [])];
      let first;
      let needs;
      try {
        [first, ...needs] = await Promise.all([call('GET', query(null)),
          ...wanted.map((status) => call('GET', `/console/api/runs?limit=50&status=${status}`))]);
      } catch (error) {
        if (error.status !== 401) stale(live, error);
        throw error;
      }
      let runs = first.runs;
      let next = first.next_cursor;
      for (let page = 1; page < pages && next && runs.length < MAX_ROWS; page += 1) {
        const more = await call('GET', query(next));
        runs = runs.concat(more.runs);
        next = more.next_cursor;
      }
      if (gen !== app.gen) return;
      const needing = needs.flatMap((page) => page.runs);
      const needIds = new Set(needing.map((run) => run.run_id));
      const rest = runs.filter((run) => !needIds.has(run.run_id));
      const sigNeed = JSON.stringify([needing.map((r) => [r.run_id, r.status, r.state, r.updated_at]), Math.floor(Date.now() / 30000)]);
      // "3 min ago" ages: the tables are drawn again at least every half minute.
      const age = Math.floor(Date.now() / 30000);
      const sigList = JSON.stringify([rest.map((r) => [r.run_id, r.status, r.state, r.updated_at]), Boolean(next), age]);
      if (sigNeed !== signatures.need) {
        signatures.need = sigNeed;
        attention.hidden = needing.length === 0;
        refill(attentionBody, () => runsTable(needing, 'Runs that need a person', ''));
      }
      if (sigList !== signatures.list) {
        signatures.list = sigList;
        refill(listBody, () => [
          runsTable(rest, title, needing.length ? 'No other runs.' : 'No runs yet: start one with `agentledger run PATH`.'),
          needing.length ? h('p', {class: 'muted small'}, `${needing.length} run(s) that need a person are listed above.`) : null]);
      }
      loadMore.hidden = !next || runs.length >= MAX_ROWS;
      live.textContent = `live · updated ${clock(Date.now())}`;
      live.classList.remove('stale');
    }, POLL_MS);
    loadMore.addEventListener('click', () => {
      pages += 1;
      signatures = {};
      controller.wake();
    });
  }

  // -- the run page -------------------------------------------------------------------------------
  function showRun(route) {
    const gen = app.gen;
    const runId = route.runId;
    const el = {
      head: h('section', {class: 'card', id: 'run-head', 'aria-labelledby': 'run-h'}),
      flash: h('div', {class: 'flash', id: 'flash', role: 'status', 'aria-live': 'polite'}),
      handoff: h('section', {class: 'card attention', id: 'handoff', 'aria-labelledby': 'handoff-h', hidden: true}),
      actions: h('section', {class: 'card review', id: 'review-actions', 'aria-labelledby': 'actions-h', hidden: true}),
      reviewer: h('section', {class: 'card', id: 'reviewer-needs', 'aria-labelledby': 'reviewer-h'}),
      graph: h('section', {class: 'card', id: 'graph', 'aria-labelledby': 'graph-h'}),
      timeline: h('section', {class: 'card', id: 'timeline', 'aria-labelledby': 'timeline-h'}),
      artifacts: h('section', {class: 'card', id: 'artifacts', 'aria-labelledby': 'artifacts-h'}),
    };
    const page = {runId, gen, el, view: null, history: null, analysis: null, sigs: {}, selected: null,
      lastVersion: null, lastHistoryAt: 0, diffs: new Map(), pendingArtifact: route.artifact, lastStatus: null};
    app.page = page;
    delete document.body.dataset.rendered;
    document.title = `${runId} · agentledger console`;
    el.head.append(h('h1', {id: 'run-h', class: 'mono'}, runId), h('p', {class: 'muted'}, 'Loading the run…'));
    $('#main').replaceChildren(el.head, el.flash, el.handoff, el.reviewer, el.actions, el.graph, el.timeline,
      el.artifacts);

    page.openArtifact = (key, byUser) => openArtifact(page, key, byUser);
    page.controller = poll(gen, async () => {
      // The first load asks for the graph's definition and the histories beside the view, not after it.
      const first = !page.view;
      const aslRead = app.asl ? null : readStateMachine(page);
      const historyRead = first ? readHistory(page) : null;
      let view;
      try {
        view = await call('GET', `/console/api/runs/${encodeURIComponent(runId)}`);
      } catch (error) {
        if (error.status === 401) throw error;
        if (error.status === 404 || error.status === 422 || error.status === 400) {
          error.stop = true;
          refill(el.head, () => [h('h1', {id: 'run-h', class: 'mono'}, runId),
            h('p', {class: 'notice error', role: 'alert'}, `${error.status} ${error.body.error || ''}: ${error.message}`),
            h('p', null, h('a', {href: '#/'}, 'All runs'))]);
        } else {
          stale($('#run-live'), error);  // a passing failure: keep what is shown, and say it may be old
        }
        throw error;
      }
      // The graph and the timeline are extras: the ledger is shown even when they cannot be read.
      await aslRead;
      if (historyRead) await historyRead;
      else if (!page.history || view.run.status === 'running' || view.run.version !== page.lastVersion ||
          Date.now() - page.lastHistoryAt > HISTORY_IDLE_MS) await readHistory(page);
      if (gen !== app.gen) return;
      page.problem = (app.asl ? null : page.aslProblem) || page.historyProblem || null;
      page.view = view;
      page.lastVersion = view.run.version;
      const analysisKey = `${page.historyAt}/${view.run.version}/${Boolean(app.asl)}`;
      if (page.analysisKey !== analysisKey) {
        page.analysisKey = analysisKey;
        page.analysis = analyze(app.asl || {States: {}}, page.history || {executions: []}, view);
      }
      renderRun(page);
      if (page.pendingArtifact) {
        const key = page.pendingArtifact;
        page.pendingArtifact = null;
        openArtifact(page, key, true);
      }
    }, () => (page.view && page.view.run.status === 'complete' ? COMPLETE_POLL_MS : POLL_MS));
  }

  /** Reads the state machine's definition into app.asl; a failure is kept as the page's problem. */
  async function readStateMachine(page) {
    try {
      app.asl = await call('GET', '/console/statemachine');
    } catch (error) {
      page.aslProblem = `the state machine's definition could not be read: ${error.message}`;
    }
  }

  /** Reads the run's executions' histories into page.history; a failure is kept as the page's problem. */
  async function readHistory(page) {
    try {
      page.history = await call('GET', `/console/history/${encodeURIComponent(page.runId)}`);
      page.historyAt = Date.now();
      page.historyProblem = null;
    } catch (error) {
      page.historyProblem = `the executions' histories could not be read: ${error.message}`;
    }
    page.lastHistoryAt = Date.now();
  }

  function stale(live, error) {
    if (!live) return;
    live.textContent = visible(`could not refresh (${error.message}); retrying`);
    live.classList.add('stale');
  }

  function renderRun(page) {
    const {view, el} = page;
    const run = view.run;
    if (page.lastStatus && page.lastStatus !== run.status) {
      announce(`Run ${run.run_id} is now ${(RUN_STATUS[run.status] || [0, run.status])[1]}.`);
    }
    page.lastStatus = run.status;
    section(page, 'head', JSON.stringify([run, view.progress]), () => renderHead(page));
    const live = $('#run-live');
    if (live) {
      live.textContent = `live · updated ${clock(Date.now())}`;
      live.classList.remove('stale');
    }

    el.handoff.hidden = run.status !== 'needs_person';
    if (!el.handoff.hidden) section(page, 'handoff', JSON.stringify([run.status, view.handoff]), () => renderHandoff(page));
    else page.sigs.handoff = null;

    el.actions.hidden = run.status !== 'awaiting_review';
    if (!el.actions.hidden) {
      const review = view.review || {};
      section(page, 'actions', JSON.stringify([run.status, run.plan_digest, review.plan_digest, review.decision]),
        () => renderActions(page));
    } else page.sigs.actions = null;

    const verify = latestTestRun(view, 'verify');
    section(page, 'reviewer', JSON.stringify([view.summary, view.evidence_status, view.effects, view.decisions.length,
      view.review, verify && [verify.digest, verify.status, verify.report && verify.report.outcome],
      diffArtifact(view) && diffArtifact(view).key, Object.keys(view.evidence)]), () => renderReviewer(page));
    section(page, 'graph', `${page.analysis.signature}${page.problem || ''}`, () => (app.asl ? renderGraph(page) :
      [h('h2', {id: 'graph-h'}, 'State machine'), h('p', {class: 'notice error'}, page.problem || 'Loading…')]));
    if (page.selected) renderStatePanel(page, false);
    const running = page.analysis.execs.some((ex) => ex.status === 'RUNNING');
    section(page, 'timeline', JSON.stringify([page.analysis.signature, page.analysis.events,
      running ? Math.floor(Date.now() / 10000) : 0]), () => renderTimeline(page));
    section(page, 'artifacts', JSON.stringify(view.artifacts.map((a) => [a.key, a.committed])),
      () => renderArtifactList(page));
    // Everything of the run is drawn: what `make bench` (g) times the page to.
    document.body.dataset.rendered = 'run';
  }

  function section(page, name, signature, render) {
    if (page.sigs[name] === signature) return;
    page.sigs[name] = signature;
    const el = page.el[name];
    refill(el, () => render());
  }

  function renderHead(page) {
    const run = page.view.run;
    const jump = [];
    if (run.status === 'awaiting_review') {
      jump.push(h('button', {type: 'button', class: 'link', dataset: {focusKey: 'jump-review'},
        onclick: () => focusSection(page.el.actions)}, 'Go to the review actions'));
    }
    return [
      h('div', {class: 'card-head'},
        h('h1', {id: 'run-h', class: 'mono'}, run.run_id),
        h('span', {id: 'run-status'}, runBadge(run.status)),
        h('span', {class: 'live', id: 'run-live'}, 'live'),
        jump),
      h('dl', {class: 'kv'},
        h('dt', null, 'Stage'), h('dd', null, run.state, run.outcome ? ` · outcome ${run.outcome}` : ''),
        // A running generation build's last word on where it is (the API's description of it).
        page.view.progress ? [h('dt', null, 'Now'), h('dd', {id: 'run-progress'}, page.view.progress.description)] : [],
        h('dt', null, 'Requested by'), h('dd', null, actor(run.requested_by, 'unknown'), ' at ', timeEl(run.created_at)),
        h('dt', null, 'Repository'), h('dd', {class: 'mono'}, run.repository),
        h('dt', null, 'Source'), h('dd', null, (page.view.summary || {}).source || '—'),
        h('dt', null, 'Revision'), h('dd', {class: 'mono'}, run.revision || '—'),
        h('dt', null, 'Plan digest'), h('dd', {class: 'mono'}, run.plan_digest || '—'),
        h('dt', null, 'Executions'), h('dd', null, (run.executions || []).map((name, i) => [i ? ', ' : '',
          h('span', {class: 'mono'}, name)]), run.resumes ? ` (${run.resumes} resume${run.resumes > 1 ? 's' : ''})` : ''),
        h('dt', null, 'Updated'), h('dd', null, timeEl(run.updated_at), ` · ledger version ${run.version}`)),
      h('p', {class: 'small'}, h('a', {href: '#/'}, '← All runs')),
    ];
  }

  function focusSection(el) {
    const heading = el.querySelector('h2');
    if (heading) {
      heading.setAttribute('tabindex', '-1');
      heading.focus();
    }
    el.scrollIntoView({block: 'start'});
  }

  function flash(page, kind, ...content) {
    refill(page.el.flash, () => h('p', {class: `notice ${kind}`}, content));
  }

  // -- the handoff and the actions ----------------------------------------------------------------
  function renderHandoff(page) {
    const {view} = page;
    const handoff = view.handoff;
    const details = (handoff && handoff.details) || {};
    const attempted = details.attempted || {};
    const response = details.response || {};
    const partial = details.partial_effect || {};
    const uncommitted = partial.uncommitted_artifacts || [];
    const effects = partial.external_effects || [];
    const resumeError = h('div', {class: 'error-box', role: 'alert', hidden: true, id: 'resume-error'});
    const button = h('button', {type: 'button', class: 'primary', id: 'resume', dataset: {focusKey: 'resume'}},
      'Resume from what is still valid');
    button.addEventListener('click', () => resume(page, button, resumeError));
    return [
      h('h2', {id: 'handoff-h'}, h('span', {'aria-hidden': 'true'}, '⚑ '), 'Handed to a person'),
      handoff ? h('p', {id: 'handoff-summary'}, h('strong', null, handoff.summary)) :
        h('p', null, 'This run needs a person; the ledger holds no handoff record for it.'),
      handoff ? h('dl', {class: 'kv'},
        h('dt', null, 'What was attempted'), h('dd', null,
          `${attempted.operation || attempted.stage || '—'}${attempted.attempt ? `, attempt ${attempted.attempt}` : ''}`,
          attempted.execution ? [' in ', h('span', {class: 'mono'}, attempted.execution)] : ''),
        h('dt', null, 'What came back'), h('dd', {id: 'handoff-message'},
          h('strong', null, response.error || ''), response.error ? ': ' : '', response.message || ''),
        h('dt', null, 'Kind'), h('dd', null, details.kind || '—'),
        h('dt', null, 'Recovery'), h('dd', null, details.recovery || '—'),
        h('dt', null, 'Complete stages'), h('dd', null, (partial.complete_stages || []).join(', ') || 'none'),
        h('dt', null, 'Uncommitted artifacts'), h('dd', null, uncommitted.length ? [
          `${uncommitted.length}: `, uncommitted.slice(0, 10).map((key, i) => [i ? ', ' : '', h('span', {class: 'mono'}, key.split('/').pop())]),
          uncommitted.length > 10 ? ` … and ${uncommitted.length - 10} more` : ''] : 'none'),
        h('dt', null, 'External effects'), h('dd', null, effects.length ? effects.slice(0, 20).map((effect, i) => [i ? '; ' : '',
          `${effect.kind} ${effect.status}${effect.receiver_id ? ` (${effect.receiver_id})` : ''}`]) : 'none'),
        h('dt', null, 'Failed at'), h('dd', null, timeEl(details.failed_at), ' · handed over ', timeEl(details.handoff_at)),
      ) : null,
      h('div', {class: 'actions'}, button,
        h('span', {class: 'muted small'}, 'Starts a new execution that keeps every stage whose evidence still holds.')),
      resumeError,
    ];
  }

  async function resume(page, button, errorBox) {
    button.disabled = true;
    errorBox.hidden = true;
    try {
      const outcome = await call('POST', `/console/api/runs/${encodeURIComponent(page.runId)}/resume`);
      const assessment = outcome.assessment || {};
      flash(page, 'ok', h('strong', null, 'Resumed'), ' as ', h('span', {class: 'mono'}, outcome.execution), `: next ${assessment.next}. `,
        assessment.reason || '', ` Complete: ${(assessment.complete || []).join(', ') || 'nothing'}. Following the run…`);
      page.controller.wake();
    } catch (error) {
      if (error.status === 401) return;
      showRefusal(errorBox, error);
      button.disabled = false;
    }
  }

  function showRefusal(box, error) {
    refill(box, () => [h('strong', null, `The API refused (${error.status} ${error.body.error || ''}):`),
      h('p', {class: 'api-message'}, error.body.message || error.message)]);
    box.hidden = false;
  }

  function renderActions(page) {
    const {view} = page;
    const run = view.run;
    const review = view.review || {};
    const digest = review.plan_digest || run.plan_digest;
    const parts = [h('h2', {id: 'actions-h'}, 'Review this plan'),
      h('p', null, 'Your decision applies to plan ', h('code', {id: 'review-digest'}, digest || '—'),
        ' only: if the plan changed since this page showed it, the API refuses it.')];
    if (review.unchanged_after) {
      const change = review.unchanged_after;
      parts.push(h('p', {class: 'notice'}, `${who(change.decided_by)} asked for changes to this very plan`,
        change.comment ? ` (“${change.comment}”)` : '', '; the planner made it again.'));
    }
    if (review.decision) {
      parts.push(h('p', {class: 'notice ok'}, `Decided: ${review.decision} by ${who(review.decided_by)} at ${when(review.decided_at)}; `,
        'the execution is moving on.'));
      return parts;
    }
    const comment = h('textarea', {id: 'review-comment', maxlength: 4000, dataset: {focusKey: 'comment'},
      placeholder: 'What you checked, or what to change'});
    const errorBox = h('div', {class: 'error-box', role: 'alert', id: 'review-error', hidden: true});
    const approve = h('button', {type: 'button', class: 'primary', id: 'approve', dataset: {focusKey: 'approve'}}, '✓ Approve');
    const changes = h('button', {type: 'button', class: 'danger', id: 'request-changes', dataset: {focusKey: 'changes'}},
      '↺ Request changes');
    const decide = async (decision) => {
      approve.disabled = true;
      changes.disabled = true;
      errorBox.hidden = true;
      const body = {decision, plan_digest: digest, comment: comment.value.trim() || null};
      try {
        const outcome = await call('POST', `/console/api/runs/${encodeURIComponent(page.runId)}/review`, body);
        flash(page, 'ok', h('strong', null, decision === 'approve' ? 'Approved' : 'Changes requested'),
          ` (plan ${shortDigest(digest)}). `,
          outcome.delivered ? 'The waiting execution took the decision; following the run…' :
            'The decision is recorded; the review keeper hands it to the waiting task. Following the run…');
        page.controller.wake();
      } catch (error) {
        if (error.status === 401) return;
        showRefusal(errorBox, error);
        approve.disabled = false;
        changes.disabled = false;
      }
    };
    approve.addEventListener('click', () => decide('approve'));
    changes.addEventListener('click', () => decide('request_changes'));
    parts.push(h('label', {for: 'review-comment'}, 'Comment ', h('span', {class: 'muted small'}, '(optional; sent with either decision)')),
      comment, h('div', {class: 'actions'}, approve, changes), errorBox);
    return parts;
  }

  // -- what a reviewer needs ----------------------------------------------------------------------
  function latestTestRun(view, stage) {
    const runs = Object.values(view.test_runs || {}).filter((t) => (t.stage || 'verify') === stage);
    runs.sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    return runs[runs.length - 1] || null;
  }

  function diffArtifact(view) {
    const diffs = view.artifacts.filter((a) => a.name === 'changes.diff');
    const committed = diffs.filter((a) => a.committed);
    return (committed.length ? committed : diffs).slice(-1)[0] || null;
  }

  function renderReviewer(page) {
    const {view} = page;
    const summary = view.summary || {};
    return [
      h('h2', {id: 'reviewer-h'}, 'What a reviewer needs'),
      h('h3', null, 'Request'),
      h('p', {class: 'request-text', id: 'request-text'}, summary.request || view.run.request),
      planBlock(summary, view),
      h('h3', null, 'Diff'),
      diffBlock(page),
      h('div', {class: 'sub'}, h('div', null, testsBlock(summary, view)), h('div', null, evidenceBlock(view))),
      effectsBlock(view),
      decisionsBlock(view),
    ];
  }

  function planBlock(summary, view) {
    const plan = summary.plan;
    const planArtifact = view.artifacts.filter((a) => a.name === 'plan.json').slice(-1)[0];
    const out = [h('h3', null, 'Plan')];
    if (!plan) {
      out.push(h('p', {class: 'muted'}, 'No plan committed yet.'));
      return out;
    }
    out.push(h('p', null, `${plan.targets} target${plan.targets === 1 ? '' : 's'} planned by ${plan.planner || 'the planner'}`,
      plan.skipped ? `, ${plan.skipped} skipped` : '', summary.outcome ? ` · outcome ${summary.outcome}` : '',
      planArtifact ? [' · ', h('a', {href: artifactHash(view.run.run_id, planArtifact.key)}, 'the whole plan (plan.json)')] : ''));
    if (plan.first && plan.first.length) {
      out.push(h('div', {class: 'table-wrap'}, h('table', {id: 'plan-items'},
        h('thead', null, h('tr', null, ['Target', 'Test file', 'Why'].map((n) => h('th', {scope: 'col'}, n)))),
        h('tbody', null, plan.first.map((item) => h('tr', null,
          h('td', {class: 'mono wrap'}, item.target), h('td', {class: 'mono wrap'}, item.test_path),
          h('td', {class: 'wrap'}, item.rationale)))))));
      if (plan.targets > plan.first.length) {
        out.push(h('p', {class: 'muted small'}, `The first ${plan.first.length} of ${plan.targets}; plan.json has them all.`));
      }
    }
    const generation = summary.generation;
    if (generation) {
      out.push(h('h3', null, 'Tests written'));
      const mutation = generation.mutation || [];
      if (mutation.length) {
        out.push(h('p', null, 'Mutation score of the targeted modules (before → after):'),
          h('ul', {class: 'list-plain'}, mutation.slice(0, 50).map((line) => h('li', null, line))));
      }
      if ((generation.killed || []).length) {
        out.push(h('p', null, `Mutants the kept tests kill (${generation.mutants_killed}):`),
          h('ul', {class: 'mono wrap'}, generation.killed.map((line) => h('li', null, line))));
      }
      if ((generation.survivors || []).length) {
        out.push(h('p', null, `Mutants that survive (${generation.survivors_total}):`),
          h('ul', {class: 'mono wrap'}, generation.survivors.map((line) => h('li', null, line))));
      }
      out.push(h('p', null, generation.funnel));
      if (generation.coverage.length) out.push(h('ul', {class: 'list-plain'}, generation.coverage.slice(0, 50).map((line) => h('li', null, line))));
      if ((generation.writer_failures || []).length) {
        out.push(h('p', null, 'No test written for:'),
          h('ul', null, generation.writer_failures.map((line) => h('li', null, line))));
      }
      if (generation.findings.length) {
        out.push(h('p', null, `${generation.findings_total} finding(s):`),
          h('ul', null, generation.findings.map((line) => h('li', null, line))));
      }
    }
    return out;
  }

  function diffBlock(page) {
    const {view} = page;
    const artifact = diffArtifact(view);
    const files = view.summary.files_changed || [];
    const filesList = files.length ? [h('p', {class: 'small'}, `${files.length} file(s) changed: `,
      files.slice(0, 50).map((f, i) => [i ? ', ' : '', h('span', {class: 'mono'}, f.path), ` (${f.lines} lines)`]),
      files.length > 50 ? ` … and ${files.length - 50} more` : '')] : [];
    if (!artifact) return [h('p', {class: 'muted'}, 'No diff yet: the execute stage writes changes.diff.'), filesList];
    const box = h('div', {id: 'diff-box'}, h('p', {class: 'muted'}, 'Loading changes.diff…'));
    const cached = page.diffs.get(artifact.key);
    const fill = (result) => refill(box, () => result.error ?
      [h('p', {class: 'notice error'}, result.error), link(artifact.url, 'Download changes.diff')] :
      [renderDiff(result.text, result.cut), result.note ? h('p', {class: 'muted small'}, result.note) : null]);
    if (cached) fill(cached);
    else {
      fetchArtifact(view.run.run_id, artifact).then((got) => {
        const result = got.error ? {error: got.error} :
          {text: new TextDecoder('utf-8').decode(got.buffer.slice(0, TEXT_LIMIT * 4)),
            note: got.buffer.byteLength > TEXT_LIMIT * 4 ? `the first ${bytes(TEXT_LIMIT * 4)} of ${bytes(got.buffer.byteLength)}` : null};
        page.diffs.set(artifact.key, result);
        fill(result);
      });
    }
    return [filesList, box, h('p', {class: 'small'}, h('a', {href: artifactHash(view.run.run_id, artifact.key)},
      'Open changes.diff as an artifact'), ` · ${bytes(artifact.size)} · sha256 ${shortDigest(artifact.sha256)}`)];
  }

  function testsBlock(summary, view) {
    const tests = summary.tests || {};
    const verify = latestTestRun(view, 'verify');
    const report = (verify && verify.report) || {};
    const counts = report.counts || {};
    const failing = counts.failing || [];
    const outcome = tests.outcome || report.outcome;
    const kind = outcome === 'passed' ? 'succeeded' : outcome ? 'failed' : 'none';
    const icon = outcome === 'passed' ? '✓' : outcome ? '✗' : '–';
    return [h('h3', null, 'Test results'),
      h('p', {id: 'test-outcome'}, badge(kind, icon, outcome || 'not run yet'),
        verify && verify.status ? h('span', {class: 'muted small'}, ` build ${verify.status}`) : ''),
      report.reason ? h('p', {class: 'small'}, report.reason) : null,
      h('table', {id: 'test-counts'}, h('tbody', null,
        [['Tests written', tests.written], ['Passed', tests.passed], ['Failed', tests.failed], ['Errors', tests.errors],
          ['Skipped', tests.skipped]].map(([name, value]) => h('tr', null, h('th', {scope: 'row'}, name),
          h('td', {class: 'num'}, value === null || value === undefined ? '—' : String(value)))))),
      tests.coverage ? h('p', {class: 'small'}, `Coverage: ${tests.coverage}`) : null,
      failing.length ? [h('p', null, h('strong', null, `Failing tests (${failing.length + (counts.failing_omitted || 0)}):`)),
        h('ul', {class: 'failing', id: 'failing-tests'}, failing.slice(0, MAX_ROWS).map((name) => h('li', null, name))),
        counts.failing_omitted ? h('p', {class: 'muted small'}, `… and ${counts.failing_omitted} more failing (not named)`) : null] :
        (outcome ? h('p', {class: 'muted small'}, 'No failing tests.') : null),
      report.command ? h('p', {class: 'small'}, 'Command: ', h('code', null, report.command),
        report.duration_s !== undefined ? ` (${report.duration_s} s)` : '') : null];
  }

  function evidenceBlock(view) {
    const statuses = Object.values(view.evidence_status || {});
    return [h('h3', null, 'Evidence, checked now'),
      statuses.length ? h('table', {id: 'evidence'},
        h('thead', null, h('tr', null, ['Evidence', 'Valid now?', 'Why', 'Recorded'].map((n) => h('th', {scope: 'col'}, n)))),
        h('tbody', null, statuses.map((status) => {
          const recorded = (view.evidence || {})[status.name];
          return h('tr', {dataset: {evidence: status.name}},
            h('td', null, status.name),
            h('td', null, badge(status.status, EVIDENCE_ICON[status.status] || '?', status.status)),
            h('td', {class: 'wrap'}, status.reason),
            h('td', {class: 'small'}, recorded ? [`by ${recorded.stage} `, timeEl(recorded.recorded_at)] : '—'));
        }))) : h('p', {class: 'muted'}, 'No evidence recorded yet.')];
  }

  function effectsBlock(view) {
    const effects = Object.values(view.effects || {});
    const pull = view.summary && view.summary.pull_request;
    return [h('h3', null, 'Effects'),
      pull ? h('p', {id: 'pull-request'}, 'Pull request: ', link(pull, pull, {'data-kind': 'pull_request'})) : null,
      effects.length ? h('div', {class: 'table-wrap'}, h('table', {id: 'effects'},
        h('thead', null, h('tr', null, ['Effect', 'Receiver', 'Status', 'What the receiver confirmed', 'Attempts', 'Link']
          .map((n) => h('th', {scope: 'col'}, n)))),
        h('tbody', null, effects.slice(0, MAX_ROWS).map((effect) => h('tr', {dataset: {kind: effect.kind}},
          h('td', null, effect.kind, h('div', {class: 'muted small'}, `stage ${effect.stage}`)),
          h('td', null, effect.receiver),
          h('td', null, badge(effect.status, EFFECT_ICON[effect.status] || '?', effect.status)),
          h('td', {class: 'wrap small'}, effect.receiver_id ? `id ${effect.receiver_id}` : 'no id yet',
            effect.confirmed_at ? [' · confirmed ', timeEl(effect.confirmed_at)] : '',
            effect.duplicates_suppressed ? ` · ${effect.duplicates_suppressed} duplicate(s) suppressed` : '',
            effect.receiver_copies !== null && effect.receiver_copies !== undefined ? ` · ${effect.receiver_copies} cop${effect.receiver_copies === 1 ? 'y' : 'ies'} at the receiver` : '',
            effect.error ? h('div', {class: 'hash-bad'}, effect.error) : null),
          h('td', {class: 'num'}, String(effect.attempts)),
          h('td', {class: 'wrap'}, effect.receiver_url ? link(effect.receiver_url, effect.receiver_url,
            {'aria-label': `${effect.kind.replace(/_/g, ' ')} ${effect.receiver_id || ''} at ${effect.receiver_url}`, 'data-kind': effect.kind}) : '—'))))),
      more(effects.length, MAX_ROWS, 'effects')) : h('p', {class: 'muted'}, 'No external effects yet.')];
  }

  function decisionsBlock(view) {
    const decisions = view.decisions || [];
    const shown = decisions.slice(-MAX_ROWS);
    const review = view.review;
    return [h('h3', null, 'Decisions'),
      h('p', {class: 'small', id: 'actors'}, 'Requested by ', h('strong', {id: 'requested-by'}, actor(view.run.requested_by, 'unknown')),
        review && review.decided_by ? ['; ', review.decision, ' by ', h('strong', {id: 'decided-by'}, actor(review.decided_by)),
          ' at ', timeEl(review.decided_at), review.comment ? ` (“${review.comment}”)` : ''] : '; not reviewed yet', '.'),
      decisions.length > shown.length ? h('p', {class: 'more'}, `${decisions.length - shown.length} earlier decisions not shown`) : null,
      h('div', {class: 'table-wrap'}, h('table', {id: 'decisions'},
        h('thead', null, h('tr', null, ['At', 'Kind', 'What', 'By', 'Execution'].map((n) => h('th', {scope: 'col'}, n)))),
        h('tbody', null, shown.map((decision) => h('tr', {dataset: {kind: decision.kind}},
          h('td', {class: 'small'}, timeEl(decision.at)),
          h('td', null, decision.kind),
          h('td', {class: 'wrap'}, decision.summary),
          h('td', null, actor(decision.actor)),
          h('td', {class: 'mono small'}, decision.execution ? shortExec(decision.execution, view.run.run_id) : '—'))))))];
  }

  // -- diff rendering -----------------------------------------------------------------------------
  const PY_KEYWORDS = new Set(('False None True and as assert async await break class continue def del elif else except ' +
    'finally for from global if import in is lambda nonlocal not or pass raise return try while with yield').split(' '));

  function span(cls, text) {
    const el = document.createElement('span');
    el.className = cls;
    el.textContent = visible(text);
    return el;
  }

  // One token at a time: a comment, the start of a string, a word, a number, or a run of anything else.
  const PY_TOKEN = /(#.*)|([rRbBuUfF]{0,2}(?:'''|"""|'|"))|([A-Za-z_][A-Za-z0-9_]*)|([0-9][0-9A-Za-z_.]*)|([^#'"A-Za-z_0-9]+)/y;

  /** Python keywords, strings, comments and numbers of one line, as spans (`carry` holds an open triple quote). */
  function highlightPython(code, carry) {
    const out = [];
    let i = 0;
    let lastWord = '';
    if (carry.triple) {
      const end = code.indexOf(carry.triple);
      if (end < 0) return [span('tok-str', code)];
      out.push(span('tok-str', code.slice(0, end + 3)));
      i = end + 3;
      carry.triple = null;
    }
    while (i < code.length) {
      PY_TOKEN.lastIndex = i;
      const m = PY_TOKEN.exec(code);
      if (!m) {
        out.push(code.slice(i));
        break;
      }
      const [text, comment, quoteStart, word, number] = m;
      if (comment) {
        out.push(span('tok-com', comment));
        break;
      }
      if (quoteStart) {
        const quote = quoteStart.replace(/^[rRbBuUfF]+/, '');
        const open = i + quoteStart.length;
        let end;
        if (quote.length === 3) {
          end = code.indexOf(quote, open);
          if (end < 0) {
            out.push(span('tok-str', code.slice(i)));
            carry.triple = quote;
            break;
          }
          end += 3;
        } else {
          let j = open;
          while (j < code.length && code[j] !== quote) j += code[j] === '\\' ? 2 : 1;
          end = Math.min(j + 1, code.length);
        }
        out.push(span('tok-str', code.slice(i, end)));
        i = end;
        continue;
      }
      if (word) {
        if (PY_KEYWORDS.has(word)) out.push(span('tok-kw', word));
        else if (lastWord === 'def' || lastWord === 'class') out.push(span('tok-def', word));
        else out.push(word);
        lastWord = word;
      } else if (number) {
        out.push(span('tok-num', number));
      } else {
        out.push(text);
        if (/\S/.test(text)) lastWord = '';
      }
      i += text.length;
    }
    return out;
  }

  function renderDiff(text) {
    const lines = text.split('\n');
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    const shown = lines.slice(0, DIFF_LINE_LIMIT);
    const box = h('div', {class: 'diff', role: 'region', 'aria-label': 'changes.diff', tabindex: 0});
    let python = false;
    const carry = {triple: null};
    const rows = [];
    for (const line of shown) {
      let cls = 'ctx';
      let mark = null;
      let code = line;
      if (line.startsWith('diff --git') || line.startsWith('index ') || line.startsWith('--- ') || line.startsWith('new file') ||
          line.startsWith('deleted file')) {
        cls = 'file';
      } else if (line.startsWith('+++ ')) {
        cls = 'file';
        python = /\.pyi?$/.test(line.slice(4).trim());
        carry.triple = null;
      } else if (line.startsWith('@@')) {
        cls = 'hunk';
      } else if (line.startsWith('+')) {
        cls = 'add';
        mark = '+';
        code = line.slice(1);
      } else if (line.startsWith('-')) {
        cls = 'del';
        mark = '−';
        code = line.slice(1);
      } else if (line.startsWith(' ')) {
        mark = ' ';
        code = line.slice(1);
      } else if (line.startsWith('\\')) {
        cls = 'hunk';
      }
      const row = span(`line ${cls}`, '');
      if (mark !== null) {
        row.append(span('mark', mark));
        if (python) row.append(...highlightPython(code, carry));
        else row.append(code);
      } else row.append(code);
      rows.push(row);
    }
    box.append(...rows);
    return [box, lines.length > shown.length ?
      h('p', {class: 'more'}, `… and ${lines.length - shown.length} more lines (download the artifact for them)`) : null];
  }

  // -- artifacts ----------------------------------------------------------------------------------
  function artifactHash(runId, key) {
    return `#/runs/${encodeURIComponent(runId)}/artifact?key=${encodeURIComponent(key)}`;
  }

  async function fetchArtifact(runId, artifact) {
    let response;
    try {
      response = await fetch(`/console/artifact/${encodeURIComponent(runId)}?key=${encodeURIComponent(artifact.key)}`,
        {credentials: 'same-origin', cache: 'no-store'});
    } catch (error) {
      return {error: `could not fetch it: ${error.message}`};
    }
    if (response.status === 401) {
      signedOut();
      return {error: 'signed out'};
    }
    if (response.status === 413) return {tooLarge: true, error: `larger than the console shows (${bytes(artifact.size)}): download it`};
    if (!response.ok) {
      const body = parseJSON(await response.text()) || {};
      return {error: `${response.status}: ${body.message || response.statusText}`};
    }
    return {buffer: await response.arrayBuffer()};
  }

  async function sha256Hex(buffer) {
    if (!(window.crypto && crypto.subtle)) return null;
    const digest = await crypto.subtle.digest('SHA-256', buffer);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
  }

  function renderArtifactList(page) {
    const {view} = page;
    const artifacts = view.artifacts || [];
    const shown = artifacts.slice(0, MAX_ROWS);
    if (!page.viewer) page.viewer = h('div', {class: 'viewer', id: 'artifact-viewer', 'aria-live': 'polite', hidden: true});
    return [
      h('h2', {id: 'artifacts-h'}, `Artifacts (${artifacts.length})`),
      h('p', {class: 'muted small'}, 'Opening one fetches its bytes and checks them against the sha256 the ledger recorded.'),
      artifacts.length ? h('div', {class: 'table-wrap'}, h('table', {class: 'artifacts'},
        h('thead', null, h('tr', null, ['Name', 'Stage', 'Size', 'sha256', 'Committed', ''].map((n) => h('th', {scope: 'col'}, n)))),
        h('tbody', null, shown.map((artifact) => h('tr', {dataset: {key: artifact.key, name: artifact.name}},
          h('td', null, h('a', {href: artifactHash(view.run.run_id, artifact.key), dataset: {focusKey: `artifact:${artifact.key}`},
            'aria-label': `Open ${artifact.name} (${artifact.stage})`}, artifact.name)),
          h('td', null, artifact.stage),
          h('td', {class: 'num'}, bytes(artifact.size)),
          h('td', {class: 'sha', title: artifact.sha256}, shortDigest(artifact.sha256)),
          h('td', null, artifact.committed ? '✓ yes' : '– no'),
          h('td', null, link(artifact.url, 'Download', {'aria-label': `Download ${artifact.name}`, download: artifact.name}))))))) :
        h('p', {class: 'muted'}, 'No artifacts yet.'),
      more(artifacts.length, shown.length, 'artifacts'),
      page.viewer,
    ];
  }

  async function openArtifact(page, key, byUser) {
    if (!page.view) {
      page.pendingArtifact = key;
      return;
    }
    if (!page.viewer) section(page, 'artifacts', null, () => renderArtifactList(page));
    const viewer = page.viewer;
    const artifact = page.view.artifacts.find((a) => a.key === key);
    viewer.hidden = false;
    const heading = h('h3', {tabindex: -1, id: 'artifact-h'}, artifact ? artifact.name : 'Artifact');
    if (!artifact) {
      refill(viewer, () => [heading, h('p', {class: 'notice error'}, 'This run has no artifact with that key.')]);
      return;
    }
    const status = h('p', {id: 'artifact-check'}, 'Fetching and checking its sha256…');
    const body = h('div', {id: 'artifact-body'});
    refill(viewer, () => [
      heading,
      h('dl', {class: 'kv small'},
        h('dt', null, 'Stage'), h('dd', null, artifact.stage),
        h('dt', null, 'Media type'), h('dd', null, artifact.media_type),
        h('dt', null, 'Size'), h('dd', null, `${bytes(artifact.size)} (${artifact.size} bytes)`),
        h('dt', null, 'sha256 (ledger)'), h('dd', {class: 'mono'}, artifact.sha256),
        h('dt', null, 'Key'), h('dd', {class: 'mono'}, artifact.key)),
      status, body,
      h('p', {class: 'small'}, link(artifact.url, `Download ${artifact.name}`, {download: artifact.name}),
        ' · ', h('button', {type: 'button', class: 'link', onclick: () => {
          viewer.hidden = true;
          history.replaceState(null, '', `#/runs/${encodeURIComponent(page.runId)}`);
        }}, 'Close')),
    ]);
    if (byUser) {
      viewer.scrollIntoView({block: 'start'});
      heading.focus({preventScroll: true});
    }
    const got = await fetchArtifact(page.runId, artifact);
    if (got.error) {
      status.replaceChildren(h('span', {class: got.tooLarge ? '' : 'hash-bad'}, got.error), ' ',
        got.tooLarge ? link(artifact.url, `Download ${artifact.name}`) : '');
      return;
    }
    const hex = await sha256Hex(got.buffer);
    if (hex === null) status.replaceChildren('This page cannot compute sha256 here (not a secure context).');
    else if (hex === String(artifact.sha256).replace(/^sha256:/, '')) {
      status.replaceChildren(h('span', {class: 'hash-ok', id: 'hash-result', dataset: {match: 'true'}},
        h('span', {'aria-hidden': 'true'}, '✓ '), 'sha256 matches the ledger'));
    } else {
      status.replaceChildren(h('span', {class: 'hash-bad', id: 'hash-result', dataset: {match: 'false'}},
        h('span', {'aria-hidden': 'true'}, '✗ '), `sha256 does not match the ledger: the ledger says ${artifact.sha256}, `,
        `these bytes hash to ${hex}`));
    }
    const type = String(artifact.media_type || '').toLowerCase();
    const name = artifact.name.toLowerCase();
    const isJson = type.includes('json') || name.endsWith('.json');
    const isDiff = type.includes('diff') || name.endsWith('.diff') || name.endsWith('.patch');
    const isText = isJson || isDiff || type.startsWith('text/') || /xml|yaml|javascript|x-python|toml/.test(type) ||
      /\.(txt|log|md|py|java|xml|ya?ml|toml|cfg|ini|csv)$/.test(name);
    if (!isText) {
      body.replaceChildren(h('p', null, `This ${artifact.media_type} file is not shown here: `,
        link(artifact.url, `download ${artifact.name}`, {download: artifact.name}), '.'));
      return;
    }
    const text = new TextDecoder('utf-8').decode(got.buffer);
    if (isDiff) {
      body.replaceChildren(...renderDiff(text.slice(0, TEXT_LIMIT)).filter(Boolean),
        text.length > TEXT_LIMIT ? h('p', {class: 'muted small'}, `showing the first ${bytes(TEXT_LIMIT)} of ${bytes(text.length)}`) : '');
      return;
    }
    if (isJson) {
      const parsed = parseJSON(text);
      body.replaceChildren(...preBlock(parsed === null ? text : JSON.stringify(parsed, null, 2), TEXT_LIMIT,
        artifact.name).filter(Boolean));
      return;
    }
    body.replaceChildren(...preBlock(text, TEXT_LIMIT, artifact.name).filter(Boolean));
  }

  // -- what the executions did, state by state ----------------------------------------------------
  function detailsOf(event) {
    const key = Object.keys(event).find((name) => name.endsWith('EventDetails'));
    return key ? event[key] || {} : {};
  }

  function parseExecution(ex, index) {
    const events = (ex.events || []).slice().sort((a, b) => a.id - b.id);
    const entries = [];
    let open = null;
    let crash = null;
    let started = parseTime(ex.start);
    let ended = parseTime(ex.stop);
    let last = started;
    for (const event of events) {
      const type = event.type || '';
      const at = parseTime(event.timestamp);
      if (Number.isFinite(at)) last = at;
      const details = detailsOf(event);
      if (type === 'ExecutionStarted') {
        if (Number.isFinite(at)) started = at;
        continue;
      }
      if (/^Execution(Failed|Aborted|TimedOut)$/.test(type)) {
        crash = {type, at, error: details.error || type.replace('Execution', '').toUpperCase(), cause: details.cause};
        if (open) open.crashed = true;
        ended = at;
        continue;
      }
      if (type === 'ExecutionSucceeded') {
        ended = at;
        continue;
      }
      if (type.endsWith('StateEntered')) {
        open = {exec: ex.name, execIndex: index, state: details.name, kind: type.slice(0, -'StateEntered'.length),
          enteredAt: at, exitedAt: null, input: details.input, output: null, attempts: []};
        entries.push(open);
        continue;
      }
      if (type.endsWith('StateExited')) {
        const entry = open && open.state === details.name ? open :
          entries.slice().reverse().find((e) => e.state === details.name && e.exitedAt === null);
        if (entry) {
          entry.exitedAt = at;
          entry.output = details.output;
        }
        open = null;
        continue;
      }
      if (!open) continue;
      if (/Scheduled$/.test(type)) {
        open.attempts.push({scheduledAt: at, input: details.input || details.parameters || null, status: 'running'});
        continue;
      }
      if (!open.attempts.length) open.attempts.push({scheduledAt: at, input: null, status: 'running'});
      const attempt = open.attempts[open.attempts.length - 1];
      if (/(Failed|TimedOut)$/.test(type)) {
        attempt.status = 'failed';
        attempt.error = details.error || type;
        attempt.cause = details.cause;
        attempt.end = at;
      } else if (/Succeeded$/.test(type)) {
        attempt.status = 'succeeded';
        attempt.output = details.output;
        attempt.end = at;
      } else if (type === 'TaskSubmitted') {
        attempt.submitted = details.output;
      } else if (/Started$/.test(type)) {
        attempt.startedAt = at;
      }
    }
    const running = ex.status === 'RUNNING';
    if (!Number.isFinite(ended)) ended = running ? NaN : last;
    for (const entry of entries) entry.outcome = entryOutcome(entry, running, crash);
    return {name: ex.name, status: ex.status, index, started, ended, last, crash, entries, truncated: Boolean(ex.truncated),
      eventCount: events.length, outcomes: new Map(), bypassed: new Set()};
  }

  function skippedOutput(entry) {
    return entry.attempts.some((attempt) => [attempt.output, attempt.submitted].some((raw) => {
      const value = parseJSON(raw);
      return Boolean(value && (value.skipped === true || (value.Payload && value.Payload.skipped === true)));
    }));
  }

  function entryOutcome(entry, running, crash) {
    const attempts = entry.attempts;
    const lastAttempt = attempts[attempts.length - 1];
    const failures = attempts.filter((a) => a.status === 'failed').length;
    if (entry.kind === 'Fail') return 'failed';
    if (entry.exitedAt === null) {
      if (entry.kind === 'Succeed') return 'succeeded';
      if (entry.crashed || crash) return 'failed';
      return running ? 'waiting' : 'failed';
    }
    if (lastAttempt && lastAttempt.status === 'failed') return 'failed';
    if (skippedOutput(entry)) return 'skipped';
    return failures ? 'retried' : 'succeeded';
  }

  /** Which state runs each stage: from what the stage tasks answered ({"stage": ...}), else from a
   * Choice of the definition that routes a stage name to a Task state. */
  function stageStates(asl, execs) {
    const states = asl.States || {};
    const map = new Map();
    for (const ex of execs) {
      for (const entry of ex.entries) {
        if (entry.kind !== 'Task') continue;
        for (const attempt of entry.attempts) {
          const value = parseJSON(attempt.output) || parseJSON(attempt.submitted);
          const stage = value && (value.stage || (value.Payload && value.Payload.stage));
          if (typeof stage === 'string' && !map.has(stage)) map.set(stage, entry.state);
        }
      }
    }
    for (const state of Object.values(states)) {
      if (state.Type !== 'Choice') continue;
      for (const rule of state.Choices || []) {
        const target = states[rule.Next];
        if (typeof rule.StringEquals === 'string' && target && target.Type === 'Task' && !map.has(rule.StringEquals)) {
          map.set(rule.StringEquals, rule.Next);
        }
      }
    }
    return map;
  }

  function completeOnEntry(view, execution) {
    const decisions = view.decisions || [];
    const assessment = decisions.find((d) => d.kind === 'assessment' && d.execution === execution);
    if (assessment && Array.isArray(assessment.details.complete)) return assessment.details.complete;
    const resumed = decisions.find((d) => d.kind === 'resume' && d.details && d.details.execution === execution);
    return (resumed && resumed.details.assessment && resumed.details.assessment.complete) || [];
  }

  function analyze(asl, history, view) {
    const runId = view.run.run_id;
    const execs = ((history && history.executions) || []).map(parseExecution);
    const stageToState = stageStates(asl, execs);
    for (const ex of execs) {
      for (const entry of ex.entries) {
        const before = ex.outcomes.get(entry.state);
        const earlierTrouble = before && (before.trouble || before.outcome === 'failed' || before.outcome === 'retried');
        let outcome = entry.outcome;
        const trouble = Boolean(earlierTrouble || entry.outcome === 'retried' ||
          entry.attempts.some((a) => a.status === 'failed'));
        if (outcome === 'succeeded' && trouble) outcome = 'retried';
        ex.outcomes.set(entry.state, {outcome, trouble, entries: ((before && before.entries) || 0) + 1});
      }
      if (ex.index === 0) continue;
      // A resume starts from the ledger: the stages it found complete with valid evidence, it skips.
      for (const stage of completeOnEntry(view, ex.name)) {
        const state = stageToState.get(stage);
        if (state && !ex.outcomes.has(state)) {
          ex.outcomes.set(state, {outcome: 'skipped', trouble: false, entries: 0, bypassed: stage});
          ex.bypassed.add(state);
        }
      }
    }
    const status = new Map();
    for (const name of Object.keys(asl.States || {})) {
      const perExec = [];
      let final = null;
      for (const ex of execs) {
        const outcome = ex.outcomes.get(name);
        if (!outcome) continue;
        perExec.push({exec: ex.name, short: shortExec(ex.name, runId), ...outcome});
        final = {...outcome, exec: ex.name, short: shortExec(ex.name, runId), latest: ex.index === execs.length - 1};
      }
      status.set(name, {status: final ? final.outcome : 'unreached', from: final, perExec});
    }
    const taken = new Set();
    for (const ex of execs) {
      for (let i = 1; i < ex.entries.length; i += 1) taken.add(`${ex.entries[i - 1].state}\u0000${ex.entries[i].state}`);
    }
    const signature = JSON.stringify([Array.from(status.entries(), ([n, v]) => [n, v.status, v.perExec.map((p) => [p.short, p.outcome, p.entries])]),
      execs.map((ex) => [ex.name, ex.status, ex.eventCount])]);
    return {execs, status, taken, stageToState, signature, runId,
      events: execs.reduce((sum, ex) => sum + ex.eventCount, 0)};
  }

  // -- the graph ----------------------------------------------------------------------------------
  const NODE_W = 184;
  const NODE_H = 42;
  const DUMMY_W = 6;
  const GAP_X = 16;
  const GAP_Y = 30;

  function ruleLabel(rule) {
    const ops = Object.keys(rule).filter((k) => k !== 'Next' && k !== 'Variable');
    if (rule.Variable && ops.length === 1) return `${rule.Variable} ${ops[0]} ${JSON.stringify(rule[ops[0]])}`;
    return JSON.stringify(rule).slice(0, 200);
  }

  /** Weighted isotonic regression (pool adjacent violators): the non-decreasing fit nearest `values`. */
  function pava(values, weights) {
    const blocks = [];
    values.forEach((value, i) => {
      const w = weights ? weights[i] : 1;
      blocks.push({sum: value * w, w, n: 1});
      while (blocks.length > 1) {
        const b = blocks[blocks.length - 1];
        const a = blocks[blocks.length - 2];
        if (a.sum / a.w <= b.sum / b.w) break;
        blocks.pop();
        a.sum += b.sum;
        a.w += b.w;
        a.n += b.n;
      }
    });
    return blocks.flatMap((b) => Array(b.n).fill(b.sum / b.w));
  }

  /** Nodes placed nearest to where they want to be (heavier ones win), in order, never overlapping. */
  function placeRow(row, desired, weights) {
    const offsets = [0];
    for (let i = 1; i < row.length; i += 1) offsets.push(offsets[i - 1] + (row[i - 1].w + row[i].w) / 2 + GAP_X);
    const fitted = pava(desired.map((d, i) => d - offsets[i]), weights);
    row.forEach((node, i) => {
      node.x = fitted[i] + offsets[i];
    });
  }

  function layoutGraph(asl) {
    const states = asl.States || {};
    const names = Object.keys(states);
    const raw = [];
    for (const name of names) {
      const state = states[name];
      const add = (to, kind, label) => {
        if (to && states[to]) raw.push({from: name, to, kind, label});
      };
      if (state.Type === 'Choice') {
        (state.Choices || []).forEach((rule) => add(rule.Next, 'choice', ruleLabel(rule)));
        add(state.Default, 'default', 'otherwise (Default)');
      } else {
        add(state.Next, 'next', 'Next');
      }
      (state.Catch || []).forEach((c) => add(c.Next, 'catch', `Catch ${(c.ErrorEquals || []).join(', ')}`));
    }
    // "<X> failed" Pass states that only relay a Catch: drawn as the dashed edge they relay.
    const relays = new Map();
    for (const name of names) {
      const state = states[name];
      if (state.Type !== 'Pass' || !state.Next || name === asl.StartAt) continue;
      const incoming = raw.filter((e) => e.to === name);
      if (incoming.length && incoming.every((e) => e.kind === 'catch')) relays.set(name, state.Next);
    }
    const merged = new Map();
    for (const edge of raw) {
      if (relays.has(edge.from)) continue;
      const to = relays.get(edge.to) || edge.to;
      const key = `${edge.from}\u0000${to}\u0000${edge.kind === 'catch' ? 'catch' : 'flow'}`;
      const found = merged.get(key);
      if (found) found.label += `; ${edge.label}`;
      else merged.set(key, {from: edge.from, to, kind: edge.kind, label: edge.label, via: relays.has(edge.to) ? edge.to : null});
    }
    const edges = Array.from(merged.values());
    const shown = names.filter((n) => !relays.has(n));

    // The main flow: what StartAt reaches without a Catch. The rest (the error path) goes to the side.
    const main = new Set();
    const queue = [asl.StartAt];
    while (queue.length) {
      const name = queue.shift();
      if (!states[name] || main.has(name) || relays.has(name)) continue;
      main.add(name);
      edges.filter((e) => e.from === name && e.kind !== 'catch').forEach((e) => queue.push(e.to));
    }
    const side = shown.filter((n) => !main.has(n));

    const rankOf = (nodes, starts) => {
      const set = new Set(nodes);
      const out = new Map(nodes.map((n) => [n, edges.filter((e) => e.from === n && set.has(e.to) && e.kind !== 'catch')]));
      const mark = new Map();
      const post = [];
      const pre = new Map();
      const back = new Set();
      const visit = (n) => {
        mark.set(n, 1);
        pre.set(n, pre.size);
        for (const e of out.get(n)) {
          const m = mark.get(e.to) || 0;
          if (m === 1) back.add(e);
          else if (m === 0) visit(e.to);
        }
        mark.set(n, 2);
        post.push(n);
      };
      starts.filter((n) => set.has(n)).forEach((n) => {
        if (!mark.get(n)) visit(n);
      });
      nodes.forEach((n) => {
        if (!mark.get(n)) visit(n);
      });
      const rank = new Map(nodes.map((n) => [n, 0]));
      for (const n of post.slice().reverse()) {
        for (const e of out.get(n)) if (!back.has(e)) rank.set(e.to, Math.max(rank.get(e.to), rank.get(n) + 1));
      }
      return {rank, back, pre, out};
    };

    const mainRank = rankOf(Array.from(main), [asl.StartAt]);
    const sideStarts = edges.filter((e) => e.kind === 'catch' && !main.has(e.to)).map((e) => e.to);
    const sideRank = rankOf(side, sideStarts);

    // Layers of the main flow, with a dummy node on each layer a long edge crosses.
    const nodes = new Map();
    const layers = [];
    const addNode = (node) => {
      nodes.set(node.id, node);
      (layers[node.rank] = layers[node.rank] || []).push(node);
    };
    for (const name of main) {
      addNode({id: name, name, rank: mainRank.rank.get(name), w: NODE_W, order: mainRank.pre.get(name), up: [], down: []});
    }
    const routes = [];
    for (const edge of edges) {
      if (!main.has(edge.from) || !main.has(edge.to) || edge.kind === 'catch') continue;
      if (mainRank.back.has(edge)) {
        routes.push({edge, type: 'back'});
        continue;
      }
      const from = nodes.get(edge.from);
      const to = nodes.get(edge.to);
      const chain = [from];
      for (let r = from.rank + 1; r < to.rank; r += 1) {
        const dummy = {id: `${edge.from}\u0000${edge.to}\u0000${r}`, dummy: true, rank: r, w: DUMMY_W,
          order: from.order + 0.5, up: [], down: []};
        addNode(dummy);
        chain.push(dummy);
      }
      chain.push(to);
      for (let i = 1; i < chain.length; i += 1) {
        chain[i - 1].down.push(chain[i]);
        chain[i].up.push(chain[i - 1]);
      }
      routes.push({edge, type: 'forward', chain});
    }
    for (let r = 0; r < layers.length; r += 1) layers[r] = layers[r] || [];
    layers.forEach((row) => row.sort((a, b) => a.order - b.order));
    // Fewer crossings: a few barycentre sweeps down and up.
    const index = () => layers.forEach((row) => row.forEach((node, i) => {
      node.pos = i;
    }));
    index();
    for (let sweep = 0; sweep < 6; sweep += 1) {
      const down = sweep % 2 === 0;
      const order = down ? layers : layers.slice().reverse();
      for (const row of order) {
        const key = new Map(row.map((node) => {
          const near = down ? node.up : node.down;
          return [node, near.length ? near.reduce((sum, n) => sum + n.pos, 0) / near.length : node.pos];
        }));
        row.sort((a, b) => key.get(a) - key.get(b) || a.pos - b.pos);
        row.forEach((node, i) => {
          node.pos = i;
        });
      }
    }
    // x: start packed, then let each node drift towards its neighbours (long edges pull harder, to run straight).
    layers.forEach((row) => {
      let x = 0;
      row.forEach((node) => {
        node.x = x + node.w / 2;
        x += node.w + GAP_X;
      });
      const mid = (x - GAP_X) / 2;
      row.forEach((node) => {
        node.x -= mid;
      });
    });
    // Each long edge runs straight down through its dummies; the nodes make room for it.
    const chains = routes.filter((r) => r.type === 'forward' && r.chain.length > 2).map((r) => r.chain.slice(1, -1));
    chains.forEach((chain) => chain.forEach((node) => {
      node.chain = chain;
    }));
    for (let iteration = 0; iteration < 30; iteration += 1) {
      const down = iteration % 2 === 0;
      for (const row of down ? layers : layers.slice().reverse()) {
        const desired = row.map((node) => {
          if (node.dummy) return node.chain.reduce((sum, n) => sum + n.x, 0) / node.chain.length;
          const near = down ? node.up : node.down;
          const pulls = iteration > 12 ? node.up.concat(node.down) : near;
          if (!pulls.length) return node.x;
          return pulls.reduce((sum, n) => sum + n.x, 0) / pulls.length;
        });
        placeRow(row, desired, row.map((node) => (node.dummy ? 6 : 1)));
      }
    }
    const yOf = (rank) => 24 + rank * (NODE_H + GAP_Y) + NODE_H / 2;
    nodes.forEach((node) => {
      node.y = yOf(node.rank);
    });

    // The side column: the error path, beside the middle of the main flow.
    const sideLayers = [];
    side.forEach((name) => (sideLayers[sideRank.rank.get(name)] = sideLayers[sideRank.rank.get(name)] || []).push(name));
    let minX = Infinity;
    let maxX = -Infinity;
    nodes.forEach((node) => {
      minX = Math.min(minX, node.x - node.w / 2);
      maxX = Math.max(maxX, node.x + node.w / 2);
    });
    const sideTop = Math.max(0, Math.floor((layers.length - sideLayers.length) / 2));
    sideLayers.forEach((row, r) => {
      (row || []).sort((a, b) => sideRank.pre.get(a) - sideRank.pre.get(b)).forEach((name, i) => {
        nodes.set(name, {id: name, name, side: true, rank: sideTop + r, w: NODE_W, up: [], down: [],
          x: maxX + 56 + NODE_W / 2 + i * (NODE_W + GAP_X), y: yOf(sideTop + r)});
      });
    });
    for (const edge of edges) {
      if (main.has(edge.from) && main.has(edge.to) && edge.kind !== 'catch') continue;
      routes.push({edge, type: edge.kind === 'catch' ? 'catch' : 'cross'});
    }
    nodes.forEach((node) => {
      minX = Math.min(minX, node.x - node.w / 2);
      maxX = Math.max(maxX, node.x + node.w / 2);
    });
    // Back edges loop round the side of the layers they span where a node there is outermost.
    const backs = routes.filter((r) => r.type === 'back');
    backs.sort((a, b) => (nodes.get(a.edge.from).rank - nodes.get(a.edge.to).rank) - (nodes.get(b.edge.from).rank - nodes.get(b.edge.to).rank));
    const laneUse = {left: [], right: []};
    for (const route of backs) {
      const from = nodes.get(route.edge.from);
      const to = nodes.get(route.edge.to);
      const spanned = Array.from(nodes.values()).filter((n) => !n.side && n.rank >= to.rank && n.rank <= from.rank);
      const right = Math.max(...spanned.map((n) => n.x + n.w / 2));
      const left = Math.min(...spanned.map((n) => n.x - n.w / 2));
      const real = (rank) => layers[rank].filter((n) => !n.dummy);
      const fromRow = real(from.rank);
      const toRow = real(to.rank);
      const outermostRight = fromRow[fromRow.length - 1] === from && toRow[toRow.length - 1] === to &&
        !(fromRow[0] === from && toRow[0] === to);
      const side = outermostRight ? 'right' : 'left';
      const used = laneUse[side].filter((l) => !(l.hi < to.rank || l.lo > from.rank)).length;
      laneUse[side].push({lo: to.rank, hi: from.rank});
      route.side = side;
      route.lane = side === 'right' ? right + 14 + used * 10 : left - 14 - used * 10;
      minX = Math.min(minX, route.lane - 6);
      maxX = Math.max(maxX, route.lane + 6);
    }
    const shiftX = 16 - minX;
    nodes.forEach((node) => {
      node.x += shiftX;
    });
    backs.forEach((route) => {
      route.lane += shiftX;
    });
    const height = Math.max(layers.length, sideTop + sideLayers.length) * (NODE_H + GAP_Y) + 30;
    return {nodes, routes, relays, width: maxX - minX + 32, height, states, main};
  }

  function edgePath(route, nodes) {
    const {edge} = route;
    const from = nodes.get(edge.from);
    const to = nodes.get(edge.to);
    const half = NODE_H / 2;
    if (route.type === 'forward') {
      const points = [[from.x, from.y + half]];
      for (const node of route.chain.slice(1, -1)) points.push([node.x, node.y - half], [node.x, node.y + half]);
      points.push([to.x, to.y - half - 2]);
      let d = `M${points[0][0]},${points[0][1]}`;
      for (let i = 1; i < points.length; i += 1) {
        const [x0, y0] = points[i - 1];
        const [x1, y1] = points[i];
        const dy = (y1 - y0) / 2;
        d += x0 === x1 ? ` L${x1},${y1}` : ` C${x0},${y0 + dy} ${x1},${y1 - dy} ${x1},${y1}`;
      }
      return d;
    }
    if (route.type === 'back') {
      const sign = route.side === 'right' ? 1 : -1;
      const sx = from.x + sign * from.w / 2;
      const tx = to.x + sign * (to.w / 2 + 2);
      const r = 6;
      return `M${sx},${from.y} H${route.lane - sign * r} Q${route.lane},${from.y} ${route.lane},${from.y - r} ` +
        `V${to.y + r} Q${route.lane},${to.y} ${route.lane - sign * r},${to.y} H${tx}`;
    }
    // Catch and cross edges: from the side facing the target to the side facing the source.
    const rightward = to.x > from.x + 1;
    const sx = from.x + (rightward ? from.w / 2 : -from.w / 2);
    const tx = to.x + (rightward ? -to.w / 2 - 2 : to.w / 2 + 2);
    if (Math.abs(to.x - from.x) < 1) return `M${from.x},${from.y + half} L${to.x},${to.y - half - 2}`;
    const bend = Math.max(30, Math.abs(tx - sx) / 2);
    return `M${sx},${from.y} C${sx + (rightward ? bend : -bend)},${from.y} ${tx + (rightward ? -bend : bend)},${to.y} ${tx},${to.y}`;
  }

  function truncate(text, max) {
    return text.length > max ? `${text.slice(0, max - 1)}…` : text;
  }

  function renderGraph(page) {
    const {analysis} = page;
    if (!page.layout) page.layout = layoutGraph(app.asl);
    const layout = page.layout;
    const {nodes, routes, states} = layout;
    const many = analysis.execs.length > 1;
    const markers = s('defs', null, ['plain', 'taken', 'catch'].map((kind) => s('marker', {id: `arrow-${kind}`, viewBox: '0 0 10 10',
      refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'},
    s('path', {d: 'M0,0 L10,5 L0,10 z', fill: kind === 'taken' ? '#24292f' : kind === 'catch' ? '#e5534b' : '#8c959f'}))));
    const edgeLayer = s('g', {class: 'edges', 'aria-hidden': 'true'});
    for (const route of routes) {
      const {edge} = route;
      const taken = edge.via ? analysis.taken.has(`${edge.from}\u0000${edge.via}`) :
        analysis.taken.has(`${edge.from}\u0000${edge.to}`);
      const catchEdge = edge.kind === 'catch';
      edgeLayer.append(s('path', {d: edgePath(route, nodes),
        class: ['edge', catchEdge ? 'catch' : '', route.type === 'back' ? 'back' : '', taken ? 'taken' : ''],
        'marker-end': `url(#arrow-${catchEdge ? 'catch' : taken ? 'taken' : 'plain'})`},
      s('title', null, `${edge.from} → ${edge.to}: ${edge.label}${edge.via ? ` (through ${edge.via})` : ''}${taken ? ' · taken by this run' : ''}`)));
    }
    const nodeLayer = s('g', {class: 'nodes'});
    for (const node of nodes.values()) {
      if (node.dummy) continue;
      const state = states[node.name];
      const info = analysis.status.get(node.name) || {status: 'unreached', perExec: []};
      const [icon, text] = STATE_STATUS[info.status];
      const x = node.x - node.w / 2;
      const y = node.y - NODE_H / 2;
      const fromOlder = many && info.from && !info.from.latest;
      const label = `${icon} ${text}${fromOlder ? ` · in ${info.from.short}` : ''}`;
      const hist = many && info.perExec.length > 1 ? info.perExec.map((p) => STATE_STATUS[p.outcome][0]).join('') : '';
      const description = `${node.name} (${state.Type}): ${STATE_STATUS_LONG[info.status]}` +
        (info.perExec.length ? `. By execution: ${info.perExec.map((p) => `${p.short} ${STATE_STATUS[p.outcome][1]}`).join(', ')}` : '') +
        '. Press Enter to show its attempts.';
      const rx = state.Type === 'Choice' ? 20 : 6;
      const g = s('g', {class: ['node', `st-${info.status}`, page.selected === node.name ? 'selected' : ''], tabindex: 0,
        role: 'button', 'aria-label': description, 'aria-pressed': page.selected === node.name ? 'true' : 'false',
        dataset: {state: node.name, status: info.status, focusKey: `state:${node.name}`}},
      s('title', null, description),
      s('rect', {class: 'ring', x: x - 4, y: y - 4, width: node.w + 8, height: NODE_H + 8, rx: rx + 3}),
      s('rect', {class: 'frame', x, y, width: node.w, height: NODE_H, rx}),
      state.Type === 'Succeed' || state.Type === 'Fail' ?
        s('rect', {class: 'frame', x: x + 3, y: y + 3, width: node.w - 6, height: NODE_H - 6, rx: Math.max(2, rx - 3)}) : null,
      s('text', {class: 'name', x: x + 10, y: y + 17}, truncate(node.name, hist ? 22 : 27)),
      s('text', {class: 'label', x: x + 10, y: y + 33}, truncate(label, 32)),
      hist ? s('text', {class: 'hist', x: x + node.w - 8, y: y + 17, 'text-anchor': 'end'}, hist) : null);
      const choose = () => selectState(page, node.name);
      g.addEventListener('click', choose);
      g.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          choose();
        }
      });
      nodeLayer.append(g);
    }
    const sideNodes = Array.from(nodes.values()).filter((n) => n.side);
    const sideLabel = sideNodes.length ? s('text', {class: 'col-label', x: Math.min(...sideNodes.map((n) => n.x - n.w / 2)),
      y: Math.min(...sideNodes.map((n) => n.y)) - NODE_H / 2 - 8}, 'error path (Catch)') : null;
    const svgEl = s('svg', {viewBox: `0 0 ${layout.width} ${layout.height}`, width: layout.width, height: layout.height,
      role: 'group', 'aria-label': `State machine graph: ${nodes.size} states drawn from the definition`, id: 'graph-svg'},
    markers, edgeLayer, nodeLayer, sideLabel);
    if (!page.statePanel) {
      page.statePanel = h('aside', {class: 'state-panel', id: 'state-panel', 'aria-live': 'polite', 'aria-label': 'Attempts of the selected state'},
        h('p', {class: 'muted'}, 'Select a state (click it, or Tab to it and press Enter) to see its attempts in every execution, with their input and output.'));
    }
    const execNames = analysis.execs.map((ex) => shortExec(ex.name, analysis.runId));
    return [
      h('h2', {id: 'graph-h'}, 'State machine'),
      h('p', {class: 'muted small'}, `Drawn from the definition AWS runs, coloured by what this run's ${analysis.execs.length} execution(s) did`,
        execNames.length ? ` (${execNames.join(', ')})` : '', '. Where executions differ, a state shows the latest; the icons at its top right ',
        'list each execution in turn. Bold arrows are transitions this run took.'),
      h('ul', {class: 'legend', 'aria-label': 'Legend'}, Object.entries(STATE_STATUS).map(([key, [icon, text]]) => h('li', null,
        h('span', {class: `swatch ${key}`, 'aria-hidden': 'true'}), h('span', {class: 'icon', 'aria-hidden': 'true'}, icon), text)),
      h('li', null, h('span', {'aria-hidden': 'true'}, '┈'), 'dashed red: Catch')),
      h('div', {class: 'graph-layout'}, h('div', {class: 'graph-box'}, svgEl), page.statePanel),
      layout.relays.size ? h('p', {class: 'muted small'}, `${layout.relays.size} Pass states that only relay a Catch ` +
        `(${Array.from(layout.relays.keys()).slice(0, 3).join(', ')}, …) are drawn as the dashed edges they relay.`) : null,
      analysis.execs.some((ex) => ex.truncated) ? h('p', {class: 'notice small'}, 'An execution\'s history is longer than the console reads; its last events are not shown.') : null,
    ];
  }

  function selectState(page, name) {
    page.selected = name;
    page.el.graph.querySelectorAll('.node').forEach((node) => {
      const on = node.dataset.state === name;
      node.classList.toggle('selected', on);
      node.setAttribute('aria-pressed', on ? 'true' : 'false');
    });
    renderStatePanel(page, true);
  }

  function renderStatePanel(page, force) {
    const {analysis} = page;
    const name = page.selected;
    const panel = page.statePanel;
    if (!panel || !name) return;
    const entries = analysis.execs.flatMap((ex) => ex.entries.filter((e) => e.state === name));
    const sig = JSON.stringify([name, entries.length, entries.map((e) => [e.outcome, e.attempts.length, e.exitedAt])]);
    if (!force && panel.dataset.sig === sig) return;
    panel.dataset.sig = sig;
    const state = app.asl.States[name] || {};
    const info = analysis.status.get(name);
    const shownEntries = entries.slice(-100);
    refill(panel, () => [
      h('h3', {id: 'state-h'}, name),
      h('p', {class: 'small muted'}, `${state.Type}${state.Comment ? ` — ${state.Comment}` : ''}`),
      h('p', null, stateBadge(info.status), ' ', h('span', {class: 'small'}, STATE_STATUS_LONG[info.status])),
      h('ul', {class: 'list-plain small', id: 'state-by-execution'}, analysis.execs.map((ex) => {
        const outcome = ex.outcomes.get(name);
        const short = shortExec(ex.name, analysis.runId);
        if (!outcome) return h('li', null, h('span', {class: 'mono'}, short), ': not entered');
        if (outcome.bypassed) {
          return h('li', null, h('span', {class: 'mono'}, short), ': ', stateBadge('skipped'),
            ` — the resume found ${outcome.bypassed} complete with valid evidence and did not run it again`);
        }
        return h('li', null, h('span', {class: 'mono'}, short), ': ', stateBadge(outcome.outcome),
          ` (${outcome.entries} entr${outcome.entries === 1 ? 'y' : 'ies'})`);
      })),
      h('h4', null, `Attempts (${entries.length})`),
      entries.length > shownEntries.length ? h('p', {class: 'more'}, `the ${entries.length - shownEntries.length} earliest are not shown`) : null,
      shownEntries.length ? shownEntries.map((entry) => attemptBlock(entry, analysis.runId)) :
        h('p', {class: 'muted'}, 'No execution of this run entered this state.'),
    ]);
  }

  function attemptBlock(entry, runId) {
    const tries = entry.attempts;
    const span = Number.isFinite(entry.exitedAt) ? duration(entry.exitedAt - entry.enteredAt) : 'not left';
    return h('div', {class: 'attempt', dataset: {exec: entry.exec, outcome: entry.outcome}},
      h('div', {class: 'attempt-head'}, h('span', {class: 'mono'}, shortExec(entry.exec, runId)), stateBadge(entry.outcome),
        h('span', {class: 'small muted'}, `entered ${clock(entry.enteredAt)} · ${span}`)),
      tries.length > 1 || tries.some((t) => t.status === 'failed') ? h('ul', null, tries.map((t, i) => h('li', null,
        `call ${i + 1}: `, t.status === 'failed' ? h('strong', {class: 'hash-bad'}, `✗ ${t.error}`) : t.status === 'succeeded' ? '✓ succeeded' : `${t.status}`,
        i > 0 && tries[i - 1].status === 'failed' ? ' (↻ retry)' : '', ` at ${clock(t.scheduledAt)}`,
        t.cause ? h('details', null, h('summary', null, 'Cause'), preBlock(t.cause, IO_LIMIT, 'Cause')) : null))) : null,
      h('details', null, h('summary', null, 'Input'), preBlock(entry.input || '', IO_LIMIT, 'Input')),
      entry.output !== null ? h('details', null, h('summary', null, 'Output'), preBlock(entry.output, IO_LIMIT, 'Output')) : null);
  }

  // -- the timeline -------------------------------------------------------------------------------
  const TICK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400].map((s) => s * 1000);

  function timeScale(execs, plotX, plotW) {
    const spans = execs.map((ex) => [ex.started, Number.isFinite(ex.ended) ? ex.ended : Date.now()])
      .filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b)).sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const [a, b] of spans) {
      const last = merged[merged.length - 1];
      if (last && a <= last[1]) last[1] = Math.max(last[1], b);
      else merged.push([a, Math.max(a + 1, b)]);
    }
    const active = merged.reduce((sum, [a, b]) => sum + (b - a), 0) || 1;
    const GAP_PX = 46;
    // Idle time between executions (a crash waiting for a person) is drawn short, and labelled.
    const gaps = [];
    for (let i = 1; i < merged.length; i += 1) {
      const idle = merged[i][0] - merged[i - 1][1];
      gaps.push(idle > active * 0.15 ? 'cut' : 'keep');
    }
    let total = active;
    for (let i = 1; i < merged.length; i += 1) if (gaps[i - 1] === 'keep') total += merged[i][0] - merged[i - 1][1];
    const cuts = gaps.filter((g) => g === 'cut').length;
    const perMs = (plotW - cuts * GAP_PX) / total;
    const segments = [];
    let x = plotX;
    for (let i = 0; i < merged.length; i += 1) {
      if (i > 0) {
        if (gaps[i - 1] === 'cut') {
          segments.push({gap: true, t0: merged[i - 1][1], t1: merged[i][0], x0: x, x1: x + GAP_PX});
          x += GAP_PX;
        } else {
          const idle = merged[i][0] - merged[i - 1][1];
          segments.push({t0: merged[i - 1][1], t1: merged[i][0], x0: x, x1: x + idle * perMs});
          x += idle * perMs;
        }
      }
      const [a, b] = merged[i];
      segments.push({t0: a, t1: b, x0: x, x1: x + (b - a) * perMs});
      x += (b - a) * perMs;
    }
    const map = (t) => {
      if (!segments.length || !Number.isFinite(t)) return plotX;
      if (t <= segments[0].t0) return segments[0].x0;
      for (const seg of segments) {
        if (t <= seg.t1) return seg.x0 + (seg.x1 - seg.x0) * ((t - seg.t0) / Math.max(1, seg.t1 - seg.t0));
      }
      return segments[segments.length - 1].x1;
    };
    return {map, segments, perMs};
  }

  function renderTimeline(page) {
    const {analysis} = page;
    const execs = analysis.execs;
    const heading = h('h2', {id: 'timeline-h'}, 'Timeline');
    if (!execs.length) return [heading, h('p', {class: page.problem ? 'notice error' : 'muted'}, page.problem || 'No executions yet.')];
    const LABEL_W = 150;
    const PLOT_W = 820;
    const ROW_H = 40;
    const TOP = 40;
    const width = LABEL_W + PLOT_W + 20;
    const height = TOP + execs.length * ROW_H + 16;
    const scale = timeScale(execs, LABEL_W, PLOT_W);
    const now = Date.now();
    const svgEl = s('svg', {viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', id: 'timeline-svg',
      'aria-label': `Timeline of ${execs.length} execution(s); the list below says the same in words`});
    svgEl.append(s('defs', null, s('pattern', {id: 'tl-gap-pattern', width: 6, height: 6, patternUnits: 'userSpaceOnUse',
      patternTransform: 'rotate(45)'}, s('rect', {width: 6, height: 6, fill: '#f6f8fa'}), s('line', {x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#d0d7de', 'stroke-width': 2}))));
    // Axis: ticks per drawn segment.
    for (const seg of scale.segments) {
      if (seg.gap) {
        svgEl.append(s('rect', {class: 'tl-gap', x: seg.x0 + 2, y: TOP - 6, width: seg.x1 - seg.x0 - 4, height: execs.length * ROW_H + 6}),
          s('text', {class: 'tl-gap-label', x: (seg.x0 + seg.x1) / 2, y: TOP - 10, 'text-anchor': 'middle'}, `≈${duration(seg.t1 - seg.t0)}`),
          s('title', null, `${duration(seg.t1 - seg.t0)} with no execution running, drawn short`));
        continue;
      }
      const px = seg.x1 - seg.x0;
      if (px < 30) continue;
      const span = seg.t1 - seg.t0;
      const step = TICK_STEPS.find((st) => (st / span) * px >= 80) || TICK_STEPS[TICK_STEPS.length - 1];
      for (let t = Math.ceil(seg.t0 / step) * step; t <= seg.t1; t += step) {
        const x = scale.map(t);
        svgEl.append(s('line', {class: 'tl-axis', x1: x, x2: x, y1: TOP - 4, y2: height - 10}),
          s('text', {class: 'tl-tick', x, y: TOP - 14, 'text-anchor': 'middle'}, clock(t)));
      }
    }
    execs.forEach((ex, row) => {
      const y = TOP + row * ROW_H;
      const end = Number.isFinite(ex.ended) ? ex.ended : now;
      const short = shortExec(ex.name, analysis.runId);
      svgEl.append(s('rect', {class: 'tl-row', x: LABEL_W, y: y + 4, width: PLOT_W, height: ROW_H - 8, rx: 3}),
        s('text', {class: 'tl-row-label', x: 6, y: y + 18}, truncate(short, 20)),
        s('text', {class: 'tl-row-status', x: 6, y: y + 32}, `${ex.status === 'RUNNING' ? '◷' : ex.status === 'SUCCEEDED' ? '✓' : '✗'} ${ex.status}`));
      for (const entry of ex.entries) {
        if (entry.kind !== 'Task' && entry.kind !== 'Wait') continue;
        const t1 = Number.isFinite(entry.exitedAt) ? entry.exitedAt : (entry.outcome === 'waiting' ? now : end);
        const x0 = scale.map(entry.enteredAt);
        const w = Math.max(2, scale.map(t1) - x0);
        const cls = entry.kind === 'Wait' ? 'pause' : entry.outcome;
        const tip = `${entry.state} — ${entry.kind === 'Wait' ? 'waiting for the build' : STATE_STATUS[entry.outcome][1]}, ` +
          `${clock(entry.enteredAt)} → ${Number.isFinite(entry.exitedAt) ? clock(entry.exitedAt) : 'now'} (${duration(t1 - entry.enteredAt)})` +
          (entry.attempts.length > 1 ? `, ${entry.attempts.length} calls` : '');
        svgEl.append(s('rect', {class: ['tl-bar', cls], x: x0, y: y + 9, width: w, height: ROW_H - 18, rx: 2,
          dataset: {state: entry.state, exec: ex.name}}, s('title', null, tip)));
        if (w > 46 && entry.kind === 'Task') {
          svgEl.append(s('text', {class: 'tl-bar-label', x: x0 + 4, y: y + ROW_H / 2 + 4}, truncate(entry.state, Math.floor(w / 6.2))));
        }
        entry.attempts.forEach((attempt, i) => {
          if (attempt.status === 'failed' && Number.isFinite(attempt.end)) {
            svgEl.append(s('text', {class: 'tl-mark crash', x: scale.map(attempt.end), y: y + 8, 'text-anchor': 'middle'}, '✗',
              s('title', null, `${entry.state}: call ${i + 1} failed (${attempt.error}) at ${clock(attempt.end)}`)));
          }
          if (i > 0 && entry.attempts[i - 1].status === 'failed') {
            svgEl.append(s('text', {class: 'tl-mark retry', x: scale.map(attempt.scheduledAt), y: y + ROW_H - 1, 'text-anchor': 'middle'}, '↻',
              s('title', null, `${entry.state}: retried (call ${i + 1}) at ${clock(attempt.scheduledAt)}`)));
          }
        });
        if (entry.outcome === 'waiting') {
          svgEl.append(s('text', {class: 'tl-mark', x: x0 + w + 3, y: y + ROW_H / 2 + 4}, '◷', s('title', null, `${entry.state}: waiting`)));
        }
      }
      if (ex.crash || (ex.status !== 'RUNNING' && ex.status !== 'SUCCEEDED')) {
        const at = ex.crash ? ex.crash.at : end;
        const x = scale.map(at);
        svgEl.append(s('line', {class: 'tl-crash', x1: x, x2: x, y1: y + 4, y2: y + ROW_H - 4}),
          s('text', {class: 'tl-mark crash', x: x + 4, y: y + 16}, `✗ ${ex.crash ? ex.crash.error : ex.status}`,
            s('title', null, `${short} ${ex.status}${ex.crash && ex.crash.cause ? `: ${ex.crash.cause}` : ''}`)));
      }
      if (row > 0) {
        const x = scale.map(ex.started);
        svgEl.append(s('line', {class: 'tl-resume', x1: x, x2: x, y1: TOP - 2, y2: y + ROW_H - 4}),
          s('text', {class: 'tl-resume-label', x: x + 3, y: y + 2 + 0}, `⤷ ${short}`));
      }
    });
    const list = h('ul', {class: 'tl-list', id: 'timeline-list'}, execs.map((ex, i) => {
      const tasks = ex.entries.filter((e) => e.kind === 'Task');
      const retries = tasks.reduce((sum, e) => sum + e.attempts.filter((a, k) => k > 0 && e.attempts[k - 1].status === 'failed').length, 0);
      const stages = Array.from(new Set(tasks.map((e) => e.state)));
      const bypassed = Array.from(ex.bypassed);
      const before = i > 0 ? execs[i - 1] : null;
      return h('li', {dataset: {exec: ex.name}},
        h('strong', {class: 'mono'}, ex.name), `: ${ex.status}`,
        i > 0 ? ` · a resume, started ${clock(ex.started)}${before && Number.isFinite(before.ended) ? ` (${duration(ex.started - before.ended)} after ${shortExec(before.name, analysis.runId)} stopped)` : ''}` :
          ` · started ${clock(ex.started)}`,
        Number.isFinite(ex.ended) ? `, ended ${clock(ex.ended)} (${duration(ex.ended - ex.started)})` : ', still running',
        ` · ran ${stages.length ? stages.slice(0, 12).join(', ') : 'no task'}`,
        retries ? ` · ${retries} retr${retries === 1 ? 'y' : 'ies'}` : '',
        bypassed.length ? ` · skipped on resume: ${bypassed.join(', ')}` : '',
        ex.crash ? h('span', {class: 'hash-bad'}, ` · ✗ ${ex.crash.type}: ${ex.crash.error}${ex.crash.cause ? ` — ${truncate(String(ex.crash.cause), 160)}` : ''}`) : '',
        ex.truncated ? ' · history cut short' : '');
    }));
    return [heading,
      h('p', {class: 'muted small'}, 'One row per execution; bars are task states (grey dashed: waiting between polls), coloured and titled by what happened. ',
        '✗ marks a failed call or a crash, ↻ a retry, ⤷ a resume.'),
      h('div', {class: 'timeline-box'}, svgEl), list];
  }

  // -- start ----------------------------------------------------------------------------------------
  document.addEventListener('DOMContentLoaded', start);
})();
