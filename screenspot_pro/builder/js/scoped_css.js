(scope) => {
  const out = [];
  for (const st of document.querySelectorAll('style')) {
    for (const r of st.sheet.cssRules) {
      if (r.selectorText === undefined) continue;
      const sel = r.selectorText.split(',').map((s) => {
        s = s.trim().replace(/^(html|body)\b/, '');
        return scope + ' ' + s;
      }).join(', ');
      out.push(sel + ' { ' + r.style.cssText + ' }');
    }
  }
  return out.join('\n');
}
