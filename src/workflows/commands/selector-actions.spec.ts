import { describe, expect, it } from '@jest/globals';
import { LISTED_IDS_CAP, PickedWorkflows } from './selector-actions.js';

describe('what an action on a selector answers (PickedWorkflows)', () => {
  it('counts every page; lists the first LISTED_IDS_CAP ids, so a client tells a short list by matched', () => {
    const picked = new PickedWorkflows();
    expect(picked.result()).toEqual({ status: 'NO_MATCH', matched: 0, changed: 0, workflowIds: [] });
    const pages = 3 * Math.ceil(LISTED_IDS_CAP / 256);
    for (let p = 0; p < pages; p++) {
      const page = Array.from({ length: 256 }, (_, i) => ({ id: `w${p * 256 + i}` }));
      picked.add(page, page.map((_, i) => i % 4 !== 0));
    }
    const result = picked.result();
    expect(result).toMatchObject({ status: 'OK', matched: pages * 256, changed: pages * 192 });
    expect(result.workflowIds).toHaveLength(LISTED_IDS_CAP);
    expect(result.workflowIds[0]).toBe('w0');
    expect(result.workflowIds[LISTED_IDS_CAP - 1]).toBe(`w${LISTED_IDS_CAP - 1}`);
  });
});
