// The dashboard's logic: poll the node's management API about once a second and update the
// page in place, touching only the elements whose data changed (a type may have 1,000 shards).
// Query parameters: type=<name> picks the type, interval=<ms> the polling period.
'use strict';

(() => {
  const params = new URLSearchParams(location.search);
  const interval = Math.max(100, Number(params.get('interval')) || 1000);
  const maxEvents = 50;
  const hotLoadRows = 10;
  // A shard is a spike when its rate is this many times the mean of the rates known here.
  const spikeFactor = 3;
  const palette = ['#4c78a8', '#f58518', '#54a24b', '#b279a2', '#e45756', '#72b7b2',
    '#9d755d', '#eeca3b', '#ff9da6', '#79706e', '#2f4b7c', '#665191'];

  const state = {
    type: params.get('type') || '',
    types: [],
    numShards: 0,
    cells: [],          // by shard id: {el, fill, owner, rate, hot, spike}
    lastHome: new Map(), // shard -> last non-empty owner seen
    colours: new Map(),  // node -> colour, in the order nodes were first seen
    members: new Map(),  // node -> its table row
    memberNames: new Set(),
    leavingSeen: new Set(),
    deadLetters: null,
    polls: 0,
  };
  const byId = (id) => document.getElementById(id);

  async function fetchJson(path) {
    const response = await fetch(path, { cache: 'no-store' });
    const body = await response.text();
    if (!response.ok) {
      let message = body;
      try { message = JSON.parse(body).error; } catch (e) { /* not JSON: keep the text */ }
      throw new Error(`${path}: ${response.status} ${message}`);
    }
    return JSON.parse(body);
  }

  async function fetchMetrics() {
    const response = await fetch('/metrics', { cache: 'no-store' });
    return response.ok ? response.text() : null;
  }

  function colourOf(node) {
    if (!node) return '';
    if (!state.colours.has(node)) {
      state.colours.set(node, palette[state.colours.size % palette.length]);
    }
    return state.colours.get(node);
  }

  function element(tag, attributes = {}, text = '') {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
    if (text) el.textContent = text;
    return el;
  }

  // -- types ------------------------------------------------------------------------------------

  function showTypes(types) {
    const select = byId('type');
    if (types.join('\n') === state.types.join('\n')) return;
    state.types = types;
    select.replaceChildren(...types.map((t) => element('option', { value: t }, t)));
    if (!types.includes(state.type)) state.type = types[0] || '';
    select.value = state.type;
  }

  byId('type').addEventListener('change', (e) => {
    state.type = e.target.value;
    resetMap();
    const url = new URL(location.href);
    url.searchParams.set('type', state.type);
    history.replaceState(null, '', url);
  });

  // -- shard map --------------------------------------------------------------------------------

  function resetMap() {
    state.numShards = 0;
    state.cells = [];
    state.lastHome.clear();
    byId('map').replaceChildren();
  }

  function buildMap(numShards) {
    const map = byId('map');
    const fragment = document.createDocumentFragment();
    state.cells = [];
    for (let shard = 0; shard < numShards; ++shard) {
      const el = element('div', { class: 'cell', 'data-shard': shard, 'data-owner': '' });
      const fill = element('span', { class: 'fill' });
      fill.style.height = '0%';
      el.append(fill, element('span', { class: 'id' }, String(shard)));
      fragment.append(el);
      state.cells.push({ el, fill, owner: null, rate: null, hot: '', spike: false, title: '' });
    }
    map.replaceChildren(fragment);
    state.numShards = numShards;
  }

  function flash(el) {
    el.classList.remove('moved');
    // Restart the animation on the next frame (a class removed and re-added in one task is
    // not seen as a change).
    requestAnimationFrame(() => el.classList.add('moved'));
  }

  function showShards(view) {
    if (view.num_shards !== state.numShards) buildMap(view.num_shards);
    const byShard = new Map(view.shards.map((s) => [s.shard, s]));
    const rates = view.shards.map((s) => s.messages_per_second).filter((r) => r !== null);
    const maxRate = Math.max(0, ...rates);
    const mean = rates.length ? rates.reduce((a, b) => a + b, 0) / rates.length : 0;
    const counts = new Map();
    for (let shard = 0; shard < state.numShards; ++shard) {
      const s = byShard.get(shard);
      const cell = state.cells[shard];
      const owner = s ? s.owner : '';
      const rate = s ? s.messages_per_second : null;
      const hot = s && s.hot_keys && s.hot_keys.length ? s.hot_keys[0].id : '';
      const spike = rate !== null && rates.length > 1 && rate > 0 && rate >= spikeFactor * mean;
      if (owner) counts.set(owner, (counts.get(owner) || 0) + 1);
      if (owner !== cell.owner) {
        cell.el.dataset.owner = owner;
        cell.el.style.backgroundColor = colourOf(owner);
        const home = state.lastHome.get(shard);
        if (owner && home && home !== owner) {
          addMoveEvent(shard, home, owner);
          flash(cell.el);
        }
        if (owner) state.lastHome.set(shard, owner);
        cell.owner = owner;
      }
      if (rate !== cell.rate) {
        cell.fill.style.height = `${rate && maxRate ? Math.round((100 * rate) / maxRate) : 0}%`;
        cell.el.dataset.rate = rate === null ? '' : rate.toFixed(1);
        cell.rate = rate;
      }
      if (hot !== cell.hot) {
        if (hot) cell.el.dataset.hotKey = hot; else delete cell.el.dataset.hotKey;
        cell.hot = hot;
      }
      if (spike !== cell.spike) {
        cell.el.classList.toggle('spike', spike);
        cell.spike = spike;
      }
      const title = `shard ${shard} · ${owner || 'no owner'}` +
        (rate !== null ? ` · ${rate.toFixed(1)} msg/s` : '') + (hot ? ` · hot: ${hot}` : '');
      if (title !== cell.title) {
        cell.el.title = title;
        cell.title = title;
      }
    }
    showLegend(counts);
    showLoad(view.shards, maxRate, mean, rates.length);
    byId('map-summary').textContent =
      `${view.type}: ${view.num_shards} shards, coordinator ${view.coordinator || 'unknown'}`;
  }

  function showLegend(counts) {
    const items = [...state.colours.keys()].filter((n) => counts.has(n) || state.memberNames.has(n))
      .map((node) => {
        const li = element('li', { 'data-legend': node });
        const swatch = element('span', { class: 'swatch' });
        swatch.style.backgroundColor = colourOf(node);
        li.append(swatch, `${node} (${counts.get(node) || 0})`);
        return li;
      });
    byId('legend').replaceChildren(...items);
  }

  // The hottest shards hosted here, as bars; a spike names the id that makes it hot.
  function showLoad(shards, maxRate, mean, known) {
    const hot = shards.filter((s) => s.local && (s.messages_per_second || (s.hot_keys || []).length))
      .sort((a, b) => (b.messages_per_second || 0) - (a.messages_per_second || 0) ||
        ((b.hot_keys[0] || {}).count || 0) - ((a.hot_keys[0] || {}).count || 0))
      .slice(0, hotLoadRows);
    const rows = hot.map((s) => {
      const rate = s.messages_per_second || 0;
      const key = s.hot_keys.length ? s.hot_keys[0] : null;
      const spike = known > 1 && rate > 0 && rate >= spikeFactor * mean;
      const li = element('li', { 'data-shard': s.shard, 'data-rate': rate.toFixed(1) });
      if (key) li.dataset.hotKey = key.id;
      if (spike) li.classList.add('spike');
      const bar = element('div', { class: 'bar' });
      bar.style.width = `${maxRate ? Math.max(1, Math.round((100 * rate) / maxRate)) : 1}%`;
      li.append(element('span', {}, `shard ${s.shard}`), bar,
        element('span', {}, `${rate.toFixed(1)}/s`));
      if (key) {
        li.append(element('span', { class: 'key' },
          `${spike ? 'spike: ' : 'hottest: '}${key.id} (~${key.count} recent)`));
      }
      return li;
    });
    byId('load').replaceChildren(...rows);
  }

  // -- members ----------------------------------------------------------------------------------

  function showMembers(view) {
    byId('cluster').textContent = `cluster ${view.cluster} · this node: ${view.self}`;
    const body = document.querySelector('#members tbody');
    const seen = new Set();
    for (const m of view.members) {
      seen.add(m.node);
      if (m.leaving) state.leavingSeen.add(m.node);
      let row = state.members.get(m.node);
      if (!row) {
        row = element('tr', { 'data-node': m.node });
        for (let i = 0; i < 7; ++i) row.append(element('td'));
        const swatch = element('span', { class: 'swatch' });
        swatch.style.backgroundColor = colourOf(m.node);
        row.cells[0].append(swatch);
        body.append(row);
        state.members.set(m.node, row);
      }
      const memberState = m.leaving ? 'leaving' : 'up';
      // This node is the one whose reachability is "self".
      const cells = [null, m.node, memberState,
        m.reachability, m.roles.join(', '), m.address, String(m.incarnation)];
      cells.forEach((text, i) => {
        if (text !== null && row.cells[i].textContent !== text) row.cells[i].textContent = text;
      });
      if (row.dataset.state !== memberState) row.dataset.state = memberState;
      if (row.dataset.reachability !== m.reachability) row.dataset.reachability = m.reachability;
    }
    for (const [node, row] of state.members) {
      if (!seen.has(node)) {
        row.remove();
        state.members.delete(node);
      }
    }
    state.memberNames = seen;
  }

  // -- events -----------------------------------------------------------------------------------

  function addEvent(kind, text, attributes) {
    const li = element('li', { 'data-kind': kind, ...attributes });
    li.append(element('time', {}, new Date().toLocaleTimeString()),
      element('span', { class: 'kind' }, kind), text);
    const list = byId('events');
    list.prepend(li);
    while (list.children.length > maxEvents) list.lastElementChild.remove();
  }

  // A hand-off when the old owner is still a member (or was seen leaving), else a failover.
  function addMoveEvent(shard, from, to) {
    const handoff = state.memberNames.has(from) || state.leavingSeen.has(from);
    addEvent(handoff ? 'handoff' : 'failover', `shard ${shard}: ${from} → ${to}`,
      { 'data-shard': shard, 'data-from': from, 'data-to': to });
  }

  // The sum of troupe_dead_letters_total over its series, from the Prometheus text.
  function deadLettersIn(text) {
    let sum = null;
    for (const line of text.split('\n')) {
      if (!/^troupe_dead_letters_total(\{| )/.test(line)) continue;
      const value = Number(line.trim().split(/\s+/).pop());
      if (!Number.isNaN(value)) sum = (sum || 0) + value;
    }
    return sum;
  }

  function showMetrics(text) {
    if (text === null) return;
    const total = deadLettersIn(text);
    if (total === null) return;
    if (state.deadLetters !== null && total > state.deadLetters) {
      const rise = total - state.deadLetters;
      addEvent('dead-letters', `${rise} message${rise === 1 ? '' : 's'} not delivered`,
        { 'data-count': rise });
    }
    state.deadLetters = total;
  }

  // -- polling ----------------------------------------------------------------------------------

  function setStatus(kind, text) {
    const status = byId('status');
    status.dataset.state = kind;
    status.textContent = text;
  }

  async function poll() {
    try {
      if (state.polls % 10 === 0 || !state.type) showTypes((await fetchJson('/cluster/types')).types);
      const [members, shards, metrics] = await Promise.all([
        fetchJson('/cluster/members'),
        state.type ? fetchJson(`/cluster/shards/${encodeURIComponent(state.type)}`) : null,
        fetchMetrics(),
      ]);
      // Members first: a move is classified by who is a member now.
      showMembers(members);
      if (shards) showShards(shards);
      showMetrics(metrics);
      setStatus('ok', `updated ${new Date().toLocaleTimeString()}`);
    } catch (e) {
      setStatus('error', String(e.message || e));
    }
    state.polls += 1;
    document.body.dataset.polls = state.polls;
    setTimeout(poll, interval);
  }

  poll();
})();
