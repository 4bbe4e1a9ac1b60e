import { Alert, Anchor, Button, Group, Select, Stack, Table, Text, Title } from '@mantine/core';
import { Fragment, useState } from 'react';
import { HISTORY_PAGE, HistoryEvent, Scope, gql, readHistoryPage } from '../api';
import { ConfirmButton, CursorListButtons, StateBadge, atLeast, shortId, time, useAction, useCursorList, usePolling, useSession } from '../shared';

const PAGE = 100;
const NODE = 'id kind name tag cron cronDescription timezone state nextFireAt lastFiredAt firedCount skippedCount triggeredCount nextFirings(count: 5) { at local }';
// The page size is written in the query: the complexity limit counts a variable `first` as its largest value.
const SCHEDULES = `query($filter: ScheduleFilterInput!, $after: String) { schedules(filter: $filter, first: ${PAGE}, after: $after) {
  totalCount totalCountCapped pageInfo { endCursor hasNextPage } nodes { ${NODE} } } }`;
const STATES = ['ACTIVE', 'PAUSED', 'DELETED'];

/** A date in the schedule's own time zone. */
const zoned = (iso: string, timezone: string) => `${new Date(iso).toLocaleString(undefined, { timeZone: timezone, hour12: false })}`;

const isFiring = (e: HistoryEvent) => e.type === 'ScheduleFired' || e.type === 'ScheduleTriggered';

/**
 * How far back from its end a schedule's history is searched for firings, at each refresh. A
 * history can be mostly other events (a SKIP schedule whose workflow is stuck records a skip per
 * occurrence; pauses and resumes): searching until ten firings are found read all of it, every
 * five seconds.
 */
const SEARCH_EVENTS = 4 * HISTORY_PAGE;

interface Firings {
  firings: HistoryEvent[];
  /** Events searched from the end, and the history's length. */
  searched: number;
  length: number;
}

/**
 * The schedule's last `count` firings, newest first: its history read backwards a page at a time
 * from its end (`historyLength`) until that many are found or SEARCH_EVENTS were read.
 */
async function lastFirings(scope: Scope, id: string, count: number): Promise<Firings> {
  const data = await gql(`query($appId: String!, $environment: String!, $id: ID!) { schedule(appId: $appId, environment: $environment, id: $id) { historyLength } }`, { ...scope, id });
  const length: number = data.schedule?.historyLength ?? 0;
  const found: HistoryEvent[] = [];
  let end = length;
  while (end > 0 && found.length < count && length - end < SEARCH_EVENTS) {
    const from = Math.max(0, end - HISTORY_PAGE, length - SEARCH_EVENTS);
    const page = await readHistoryPage('schedule', scope, id, from, end - from);
    found.unshift(...page.events.filter(isFiring));
    end = from;
  }
  return { firings: found.slice(-count).reverse(), searched: length - end, length };
}

const count = (n: number) => n.toLocaleString('en');

function LastFirings({ id, kind }: { id: string; kind: string }) {
  const { scope } = useSession();
  const { data } = usePolling(() => lastFirings(scope, id, 10), [id], 5000);
  const firings = data?.firings ?? [];
  const partial = data !== undefined && data.searched < data.length;
  const searchedNote = partial ? `among the last ${count(data.searched)} of its ${count(data.length)} events` : '';
  if (firings.length === 0) return <Text size="sm">{partial ? `No firings ${searchedNote}.` : 'No firings yet.'}</Text>;
  return (
    <Stack gap={2}>
      {firings.map((e) => (
        <Text size="sm" key={e.revision}>
          {time(e.recordedAt)} {e.type === 'ScheduleTriggered' ? '(triggered)' : ''} →{' '}
          {!e.data.dispatchId ? (
            '—'
          ) : kind === 'WORKFLOW' ? (
            <Anchor href={`#/workflows/${e.data.dispatchId}`}>{shortId(e.data.dispatchId)}</Anchor>
          ) : (
            // A task has no page of its own: its id, to look it up in the tasks query.
            <Text span size="sm" ff="monospace">
              task {e.data.dispatchId}
            </Text>
          )}
        </Text>
      ))}
      {partial && firings.length < 10 && (
        <Text size="xs" c="dimmed">
          The firings {searchedNote}.
        </Text>
      )}
    </Stack>
  );
}

export function SchedulesPage() {
  const { scope, canControl } = useSession();
  const [state, setState] = useState<string | null>(null);
  const filter = { ...scope, ...(state ? { state } : {}) };
  // In creation order, a page at a time: every schedule can be reached, however many came before it.
  const list = useCursorList(
    () => gql(SCHEDULES, { filter }),
    (data: any) => data.schedules,
    async (after) => (await gql(SCHEDULES, { filter, after })).schedules,
    JSON.stringify(filter),
  );
  const { data, error } = list;
  const action = useAction(list.refresh);
  const [open, setOpen] = useState<string | null>(null);
  const act = (field: string, input: string, id: string) => action.run(() => gql(`mutation($input: ${input}!) { ${field}(input: $input) { id } }`, { input: { ...scope, id } }));

  return (
    <Stack>
      <Title order={3}>Schedules</Title>
      <Group align="flex-end">
        <Select label="State" data={STATES} value={state} onChange={setState} clearable placeholder="any" />
      </Group>
      {(error || action.error) && <Alert color="red">{error ?? action.error}</Alert>}
      <Text size="sm" c="dimmed">
        {data ? `${atLeast(data.schedules.totalCount, data.schedules.totalCountCapped)} schedules, oldest first` : 'Loading…'}
      </Text>
      <Table striped data-testid="schedules-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>When</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Next five firings</Table.Th>
            <Table.Th>Last fired</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.nodes.map((s: any) => (
            <Fragment key={s.id}>
              <Table.Tr data-schedule={s.name}>
                <Table.Td>
                  {s.name}
                  <Text size="xs" c="dimmed">
                    {s.kind.toLowerCase()} {s.tag ? `· ${s.tag}` : ''} · {shortId(s.id)}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{s.cronDescription}</Text>
                  <Text size="xs" c="dimmed" ff="monospace">
                    {s.cron} ({s.timezone})
                  </Text>
                </Table.Td>
                <Table.Td>
                  <StateBadge state={s.state} />
                </Table.Td>
                <Table.Td>
                  {s.nextFirings.map(({ at: f }: { at: string }) => (
                    <Text size="xs" key={f}>
                      {zoned(f, s.timezone)}
                    </Text>
                  ))}
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{time(s.lastFiredAt)}</Text>
                  <Text size="xs" c="dimmed">
                    {s.firedCount} fired · {s.skippedCount} skipped · {s.triggeredCount} triggered
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap">
                    <Button size="xs" variant="default" onClick={() => setOpen(open === s.id ? null : s.id)}>
                      Firings
                    </Button>
                    {canControl && s.state === 'ACTIVE' && (
                      <Button size="xs" variant="light" onClick={() => act('pauseSchedule', 'PauseScheduleInput', s.id)}>
                        Pause
                      </Button>
                    )}
                    {canControl && s.state === 'PAUSED' && (
                      <Button size="xs" variant="light" onClick={() => act('resumeSchedule', 'ResumeScheduleInput', s.id)}>
                        Resume
                      </Button>
                    )}
                    {canControl && s.state !== 'DELETED' && (
                      <>
                        <Button size="xs" variant="light" color="teal" onClick={() => act('triggerSchedule', 'TriggerScheduleInput', s.id)}>
                          Trigger now
                        </Button>
                        <ConfirmButton label="Delete" question={`Delete the schedule of ${s.name}? It never fires again.`} onConfirm={() => act('deleteSchedule', 'DeleteScheduleInput', s.id)} />
                      </>
                    )}
                  </Group>
                </Table.Td>
              </Table.Tr>
              {open === s.id && (
                <Table.Tr>
                  <Table.Td colSpan={6}>
                    <LastFirings id={s.id} kind={s.kind} />
                  </Table.Td>
                </Table.Tr>
              )}
            </Fragment>
          ))}
        </Table.Tbody>
      </Table>
      <CursorListButtons list={list} moreLabel="Load more" />
    </Stack>
  );
}
