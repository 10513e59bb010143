// The flame graph page of jprof flame. It reads the profile from the
// flame-data element (see reports/flame.go), builds the trees of the two
// views (one per thread, merged), and draws the frames as positioned
// elements, root on top. Names reach the page only through textContent.
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($('flame-data').textContent);
  const NV = data.values.length;
  const H = 18; // frame height in px, as --h in the style sheet
  // Frames narrower than this many pixels are not drawn (a JVM's startup
  // has tens of thousands of nodes); the status line counts them.
  const MIN_PX = 0.5;

  // A view node: name, self and total values per data.values, children,
  // parent, depth; c counts the nodes of its subtree with a non-zero
  // total, per value. Nothing here recurses: a Java stack can be
  // thousands of frames deep.
  function mk(name, parent) {
    const n = { n: name, s: new Array(NV).fill(0), t: null, c: null, k: [], p: parent, d: parent ? parent.d + 1 : 0 };
    if (parent) parent.k.push(n);
    return n;
  }
  // eachNode calls f with each data node's name, parent index (-1 for a
  // thread root) and offset of its values in data.nodes, parents first.
  function eachNode(f) {
    const w = NV + 2;
    for (let i = 0, o = 0; o < data.nodes.length; i++, o += w) {
      f(i, data.names[data.nodes[o]], data.nodes[o + 1] - 1, o + 2);
    }
  }
  function addSelf(n, o) {
    for (let i = 0; i < NV; i++) n.s[i] += data.nodes[o + i];
  }
  // finish sets the totals and counts of the nodes in list (parents
  // before children) from the last to the first.
  function finish(list) {
    for (const n of list) {
      n.t = n.s.slice();
      n.c = new Array(NV).fill(0);
    }
    for (let j = list.length - 1; j >= 0; j--) {
      const n = list[j];
      for (let i = 0; i < NV; i++) {
        if (n.t[i]) n.c[i]++;
        if (n.p) {
          n.p.t[i] += n.t[i];
          n.p.c[i] += n.c[i];
        }
      }
    }
  }
  const views = {};
  function view(name) {
    if (views[name]) return views[name];
    const merged = name === 'merged';
    const root = mk(merged ? 'all threads (merged)' : 'all threads', null);
    const list = [root];
    const of = []; // data node index -> view node
    eachNode((i, nm, parent, o) => {
      let n;
      if (!merged) {
        n = mk(nm, parent < 0 ? root : of[parent]);
        list.push(n);
      } else if (parent < 0) {
        n = root; // a thread's own time, outside any method
      } else {
        // Join the children of the same name under one merged node.
        const p = of[parent];
        if (!p.byName) p.byName = new Map();
        n = p.byName.get(nm);
        if (!n) {
          n = mk(nm, p);
          p.byName.set(nm, n);
          list.push(n);
        }
      }
      addSelf(n, o);
      of[i] = n;
    });
    finish(list);
    return (views[name] = root);
  }
  // walk calls enter for n and every node below it, parents first and
  // children in order, and leave after a node's subtree; enter returning
  // false skips the node's subtree (leave is still called).
  function walk(n, enter, leave) {
    const stack = [n];
    while (stack.length) {
      const x = stack.pop();
      if (x.leave) {
        leave(x.leave);
        continue;
      }
      const go = enter(x);
      if (leave) stack.push({ leave: x });
      if (go === false) continue;
      for (let i = x.k.length - 1; i >= 0; i--) stack.push(x.k[i]);
    }
  }

  const st = { view: data.merged ? 'merged' : 'threads', vi: data.value, zoom: null, term: '' };
  let frames = []; // the drawn frames' nodes, by the element's index

  // types maps a name to the type letters of its nodes (data.types).
  const types = new Map();
  data.names.forEach((nm, i) => types.set(nm, data.types[i] || ''));
  // typeText says a name's types in words: "jit-compiled, interpreted".
  function typeText(name) {
    return [...(types.get(name) || '')].map((t) => data.typeNames[t] || t).join(', ');
  }

  // Colours: the hue tells the method type (JIT-compiled green,
  // interpreted aqua, native yellow, compiling red, other purple); a
  // method that ran as several types (merged by the java and short name
  // forms) is drawn in a blend of the first two, darker; the shade varies
  // with the name so that neighbours stand apart.
  const hues = { J: [95, 135], j: [95, 135], I: [170, 200], i: [170, 200], N: [40, 60], n: [40, 60], C: [0, 15], O: [265, 290] };
  function colour(name) {
    let h = 2166136261;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619) >>> 0;
    const r = (h % 1000) / 1000;
    const ts = types.get(name) || '';
    const hue = hues[ts[0]];
    if (!hue) return `hsl(0, 0%, ${78 + r * 10}%)`;
    let x = hue[0] + r * (hue[1] - hue[0]);
    const second = ts.length > 1 && hues[ts[1]];
    if (second && second !== hue) x = (x + second[0] + r * (second[1] - second[0])) / 2;
    return `hsl(${x}, 60%, ${(second ? 50 : 58) + r * 14}%)`;
  }

  function fmt(x) {
    return Math.round(x).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  function pct(x, of) {
    return of ? ((100 * x) / of).toFixed(2) + '%' : '-';
  }
  function matches(n) {
    return st.term !== '' && n.n.toLowerCase().includes(st.term);
  }
  // matchedValue is the value of the frames under n that match, not
  // counting a match inside another twice.
  function matchedValue(n, vi) {
    let v = 0;
    walk(n, (x) => {
      if (!matches(x)) return true;
      v += x.t[vi];
      return false;
    });
    return v;
  }

  const chart = $('chart');
  const tip = $('tip');
  const search = $('search');
  function render() {
    const root = view(st.view);
    const z = st.zoom || root;
    const vi = st.vi;
    const total = z.t[vi];
    const W = chart.clientWidth;
    frames = [];
    chart.textContent = '';
    tip.style.display = 'none'; // its frame may be gone
    const empty = $('empty');
    empty.style.display = total ? 'none' : 'block';
    empty.textContent = total ? '' : `Nothing to show: ${data.values[vi].name} is 0 everywhere in this view.`;
    let drawn = 0, narrow = 0, maxDepth = 0;
    const frag = document.createDocumentFragment();
    const place = (n, x, w, ancestor) => {
      const el = document.createElement('div');
      el.className = ancestor ? 'frame ancestor' : 'frame';
      if (matches(n)) el.classList.add('match');
      el.style.left = x * 100 + '%';
      el.style.width = w * 100 + '%';
      el.style.top = n.d * H + 'px';
      el.style.background = colour(n.n);
      if (w * W > 20) el.textContent = n.n;
      el.dataset.i = frames.length;
      frames.push(n);
      frag.appendChild(el);
      maxDepth = Math.max(maxDepth, n.d);
      drawn++;
    };
    if (total) {
      const ancestors = [];
      for (let a = z.p; a; a = a.p) ancestors.push(a);
      for (const a of ancestors) place(a, 0, 1, true);
      // Depth first with explicit x offsets: a child starts where its
      // previous sibling ends.
      const xs = new Map([[z, 0]]);
      walk(z, (n) => {
        if (!n.t[vi]) return false;
        let x = xs.get(n);
        xs.delete(n);
        const w = n.t[vi] / total;
        if (w * W < MIN_PX) {
          narrow += n.c[vi];
          return false;
        }
        place(n, x, w, false);
        for (const c of n.k) {
          xs.set(c, x);
          x += c.t[vi] / total;
        }
        return true;
      });
    }
    chart.appendChild(frag);
    chart.style.height = (total ? maxDepth + 1 : 0) * H + 'px';

    const s = $('status');
    s.textContent = `${fmt(drawn)} frames` + (narrow ? `, ${fmt(narrow)} too narrow to draw` : '');
    s.dataset.drawn = drawn;
    s.dataset.narrow = narrow;
    const m = $('matched');
    if (st.term === '') {
      m.textContent = '';
    } else {
      // Frames too narrow to draw match too: count them all.
      let hits = 0;
      walk(z, (n) => {
        if (!n.t[vi]) return false;
        if (matches(n)) hits++;
        return true;
      });
      m.textContent = `matched ${pct(matchedValue(z, vi), total)} of ${data.values[vi].name} in ${fmt(hits)} frames`;
    }
    methodTable(z, vi, total);
    const path = [];
    for (let a = z; a; a = a.p) path.unshift(a.n);
    $('crumbs').textContent = st.zoom ? 'zoomed: ' + path.join(' \u203a ') : 'click a frame to zoom in, Esc or Reset zoom to come back';
    document.body.dataset.ready = '1';
  }

  // The methods table: each name under the zoomed frame with its self
  // and total values, by self or by total (the flame graph's widths are
  // totals; this is where self values are compared). A recursive method's
  // total counts its outermost frames only. A click on a row searches for
  // that name.
  const TABLE_ROWS = 30;
  const callsIdx = NV - 1;
  function methodTable(z, vi, total) {
    const table = $('methods');
    const order = $('order').value;
    $('methods-box').hidden = !order;
    const body = table.tBodies[0];
    body.textContent = '';
    if (!order) return;
    const by = new Map();
    const onPath = new Map();
    const enter = (n) => {
      let m = by.get(n.n);
      if (!m) by.set(n.n, (m = { n: n.n, self: 0, total: 0, calls: 0 }));
      m.self += n.s[vi];
      m.calls += n.s[callsIdx];
      const depth = onPath.get(n.n) || 0;
      if (depth === 0) m.total += n.t[vi];
      onPath.set(n.n, depth + 1);
    };
    const leave = (n) => onPath.set(n.n, onPath.get(n.n) - 1);
    // The page's root is no method: start below it.
    if (z.p) walk(z, enter, leave);
    else for (const c of z.k) walk(c, enter, leave);
    const rows = [...by.values()].filter((m) => m[order] > 0);
    rows.sort((a, b) => b[order] - a[order] || (a.n < b.n ? -1 : 1));
    const unit = data.values[vi].unit ? ' ' + data.values[vi].unit : '';
    for (const m of rows.slice(0, TABLE_ROWS)) {
      const tr = body.insertRow();
      for (const c of [fmt(m.self) + unit, pct(m.self, total), fmt(m.total) + unit, pct(m.total, total), fmt(m.calls), m.n]) {
        tr.insertCell().textContent = c;
      }
      tr.addEventListener('click', () => {
        search.value = m.n;
        st.term = m.n.toLowerCase();
        render();
      });
    }
  }

  // Controls.
  const sel = $('value');
  data.values.forEach((v, i) => {
    const o = document.createElement('option');
    o.value = i;
    o.textContent = v.unit ? `${v.name} (${v.unit})` : v.name;
    sel.appendChild(o);
  });
  sel.value = st.vi;
  sel.addEventListener('change', () => {
    st.vi = +sel.value;
    render();
  });
  const vsel = $('view');
  vsel.value = st.view;
  vsel.addEventListener('change', () => {
    st.view = vsel.value;
    st.zoom = null;
    render();
  });
  $('order').addEventListener('change', render);
  search.addEventListener('input', () => {
    st.term = search.value.toLowerCase();
    render();
  });
  const reset = () => {
    st.zoom = null;
    render();
  };
  $('reset').addEventListener('click', reset);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') reset();
  });
  chart.addEventListener('click', (e) => {
    const el = e.target.closest('.frame');
    if (!el) return;
    const n = frames[+el.dataset.i];
    st.zoom = n.p ? n : null;
    render();
  });

  // Tooltip: every value of the frame, self and total, and their shares
  // of the view's total.
  chart.addEventListener('mousemove', (e) => {
    const el = e.target.closest('.frame');
    if (!el) {
      tip.style.display = 'none';
      return;
    }
    const n = frames[+el.dataset.i];
    const root = view(st.view);
    tip.textContent = '';
    const name = document.createElement('div');
    name.className = 'name';
    name.textContent = n.n;
    tip.appendChild(name);
    const tt = typeText(n.n);
    if (tt) {
      const type = document.createElement('div');
      type.className = 'type';
      type.textContent = tt;
      tip.appendChild(type);
    }
    const table = document.createElement('table');
    const row = (cells, head) => {
      const tr = table.insertRow();
      for (const c of cells) {
        const td = document.createElement(head ? 'th' : 'td');
        td.textContent = c;
        tr.appendChild(td);
      }
    };
    row(['', 'self', 'total', 'self, % of all', 'total, % of all'], true);
    data.values.forEach((v, i) => {
      const unit = v.unit ? ' ' + v.unit : '';
      row([v.name, fmt(n.s[i]) + unit, fmt(n.t[i]) + unit, pct(n.s[i], root.t[i]), pct(n.t[i], root.t[i])]);
    });
    tip.appendChild(table);
    tip.style.display = 'block';
    const r = tip.getBoundingClientRect();
    tip.style.left = Math.max(0, Math.min(e.clientX + 12, innerWidth - r.width - 4)) + 'px';
    tip.style.top = (e.clientY + 16 + r.height > innerHeight ? e.clientY - r.height - 8 : e.clientY + 16) + 'px';
  });
  chart.addEventListener('mouseleave', () => {
    tip.style.display = 'none';
  });

  if (data.notes && data.notes.length) {
    const notes = $('notes');
    notes.querySelector('summary').textContent = `Notes from the profile's header (${data.notes.length})`;
    const list = notes.querySelector('div');
    for (const t of data.notes) list.appendChild(document.createElement('div')).textContent = t;
    notes.hidden = false;
  }
  let pending = false;
  addEventListener('resize', () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      render();
    });
  });
  render();
})();
