import { Accordion, Alert, Anchor, Badge, Button, Card, Code, Group, Modal, SimpleGrid, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { memo, useMemo, useState } from 'react';
import { HistoryEvent, gql } from '../api';
import { HistoryProgress, useHistory } from '../history';
import { ConfirmButton, JsonBlock, StateBadge, atLeast, shortId, time, useAction, usePolling, useSession } from '../shared';
import { useWindowedList } from '../windowed';

const WORKFLOW = `query($appId: String!, $environment: String!, $id: ID!, $children: WorkflowFilterInput!) {
  workflow(appId: $appId, environment: $environment, id: $id) { id name version tag state input output error parentId scheduleId createdAt updatedAt historyLength }
  workflows(filter: $children, first: 100) { totalCount totalCountCapped nodes { id name tag state createdAt } }
}`;

interface Attempt {
  attempt: number;
  workerId: string;
  startedAt: string;
  endedAt: string | null;
  outcome: 'running' | 'completed' | 'failed';
  error: string | null;
}
interface TaskRow {
  seq: number;
  name: string;
  args: unknown;
  state: string;
  attempts: Attempt[];
}

/** The workflow's tasks and each attempt, read from its history. */
function tasksOf(history: HistoryEvent[]): TaskRow[] {
  const tasks = new Map<number, TaskRow>();
  for (const e of history) {
    const task = tasks.get(e.data?.seq);
    const current = task?.attempts[task.attempts.length - 1];
    switch (e.type) {
      case 'TaskScheduled':
        tasks.set(e.data.seq, { seq: e.data.seq, name: e.data.name, args: e.data.args, state: 'PENDING', attempts: [] });
        break;
      case 'TaskStarted':
        if (task) {
          task.attempts.push({ attempt: e.data.attempt, workerId: e.data.workerId, startedAt: e.data.startedAt, endedAt: null, outcome: 'running', error: null });
          task.state = 'RUNNING';
        }
        break;
      case 'TaskCompleted':
        if (task && current) Object.assign(current, { endedAt: e.recordedAt, outcome: 'completed' });
        if (task) task.state = 'COMPLETED';
        break;
      case 'TaskAttemptFailed':
        if (task && current) Object.assign(current, { endedAt: e.recordedAt, outcome: 'failed', error: `${e.data.reason}: ${e.data.error?.message}` });
        if (task) task.state = e.data.retryAt ? 'PENDING' : task.state;
        break;
      case 'TaskFailed':
        if (task) task.state = 'FAILED';
        break;
      case 'WorkflowRetried':
        for (const seq of e.data.resetTasks ?? []) {
          const reset = tasks.get(seq);
          if (reset) reset.state = 'PENDING';
        }
        break;
    }
  }
  return [...tasks.values()];
}

function summary(e: HistoryEvent, queued?: HistoryEvent): string {
  const d = e.data ?? {};
  if (d.error?.message) return d.error.message;
  switch (e.type) {
    case 'WorkflowDispatched':
      return `${d.name}(${JSON.stringify(d.input).slice(1, -1)})${d.tag ? ` tag ${d.tag}` : ''}`;
    case 'TaskScheduled':
      return `#${d.seq} ${d.name}`;
    case 'TaskStarted':
      return `#${d.seq} attempt ${d.attempt} on ${d.workerId}`;
    case 'TaskCompleted':
      return `#${d.seq} → ${JSON.stringify(d.result)}`;
    case 'DecisionCompleted':
      return (d.commands ?? []).map((c: { type: string; name?: string }) => c.type + (c.name ? ` ${c.name}` : '')).join(', ') || 'no new commands';
    case 'DecisionFailed':
      return `${d.code}: ${d.message}`;
    case 'WorkflowEventReceived':
      // A release names the WorkflowEventQueued (same stream) that holds its name and data: shown
      // with them when that event is among those loaded.
      if (d.queuedAt === undefined) return `${d.name} ${JSON.stringify(d.data)}`;
      return queued ? `${queued.data?.name} ${JSON.stringify(queued.data?.data)} (released; queued at revision ${d.queuedAt})` : `release of the event queued at revision ${d.queuedAt}`;
    case 'WorkflowEventQueued':
      // Its row says it is queued (the type); its release, later, says where it came from.
      return `${d.name} ${JSON.stringify(d.data)}`;
    case 'WorkflowCompleted':
      return JSON.stringify(d.result);
    case 'WorkflowTerminated':
      return d.reason ?? '';
    case 'WorkflowRetried':
      return d.resetTasks?.length ? `tasks ${d.resetTasks.map((s: number) => `#${s}`).join(', ')} run again` : 'the last decision runs again';
    case 'TimerStarted':
      return `#${d.seq} fires at ${time(d.fireAt)}`;
    default:
      return d.seq !== undefined ? `#${d.seq}` : '';
  }
}

/**
 * A summary as one line shows it: the start of it. An event's data may be MAX_PAYLOAD_BYTES (an
 * event's data, a task's result): the whole text in each row, clamped to a line by CSS, was laid
 * out whole, a second's freeze for each screenful of such rows. The event's panel shows it all.
 */
const SUMMARY_CHARS = 500;
const clip = (text: string): string => (text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS)}…` : text);

const duration = (a: Attempt) => (a.endedAt ? `${Math.max(0, Date.parse(a.endedAt) - Date.parse(a.startedAt))} ms` : 'running');

/** Tasks rendered at first, and added by each "Show more". */
const TASKS_PAGE = 100;

/**
 * The tasks table, memoised like the timeline: it renders again only when more history is read.
 * It renders the first TASKS_PAGE tasks, more on request: a workflow of 3,000 tasks rendered them
 * all again at each page of history read ("Load all"), in long tasks of up to 2.4 s.
 */
const TasksTable = memo(function TasksTable({ tasks }: { tasks: TaskRow[] }) {
  const [shown, setShown] = useState(TASKS_PAGE);
  return (
    <>
      <Table data-testid="tasks-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>#</Table.Th>
            <Table.Th>Task</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Attempts</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {tasks.slice(0, shown).map((t) => (
            <Table.Tr key={t.seq}>
              <Table.Td>{t.seq}</Table.Td>
              <Table.Td>
                {t.name}
                <Text size="xs" c="dimmed" ff="monospace">
                  {clip(JSON.stringify(t.args) ?? '')}
                </Text>
              </Table.Td>
              <Table.Td>
                <StateBadge state={t.state} />
              </Table.Td>
              <Table.Td>
                {t.attempts.map((a, i) => (
                  <Text key={i} size="xs">
                    #{a.attempt} {a.outcome} in {duration(a)} on {a.workerId}
                    {a.error && <Text span c="red" size="xs">{` — ${a.error}`}</Text>}
                  </Text>
                ))}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {tasks.length > shown && (
        <Group mt="xs">
          <Text size="sm" c="dimmed" data-testid="tasks-shown">
            Showing the first {shown.toLocaleString('en')} of {tasks.length.toLocaleString('en')} tasks.
          </Text>
          <Button size="xs" variant="default" onClick={() => setShown((n) => n + TASKS_PAGE)}>
            Show {Math.min(TASKS_PAGE, tasks.length - shown)} more
          </Button>
        </Group>
      )}
    </>
  );
});

/** One event of the timeline. Memoised: scrolling renders the rows that come into view, not these again. */
const TimelineRow = memo(function TimelineRow({ e, index, count, queued }: { e: HistoryEvent; index: number; count: number; queued?: HistoryEvent }) {
  return (
    <Accordion.Item value={String(e.revision)} data-index={index} role="listitem" aria-setsize={count} aria-posinset={index + 1}>
      <Accordion.Control>
        <Group gap="sm" wrap="nowrap">
          <Text size="xs" c="dimmed" miw={28}>
            {e.revision}
          </Text>
          <Badge variant="light" color={/Failed|Terminated/.test(e.type) ? 'red' : /Completed|Retried/.test(e.type) ? 'green' : 'blue'} w={190}>
            {e.type}
          </Badge>
          <Text size="sm" style={{ flex: 1 }} lineClamp={1} data-testid="timeline-summary">
            {clip(summary(e, queued))}
          </Text>
          {e.data?.attempt !== undefined && <Badge variant="outline">attempt {e.data.attempt}</Badge>}
          <Text size="xs" c="dimmed">
            {e.metadata?.actor}
          </Text>
          <Text size="xs" c="dimmed" w={150}>
            {time(e.recordedAt)}
          </Text>
        </Group>
      </Accordion.Control>
      <Accordion.Panel>
        <Code block>{JSON.stringify({ data: e.data, metadata: e.metadata }, null, 2)}</Code>
      </Accordion.Panel>
    </Accordion.Item>
  );
});

/**
 * The WorkflowEventQueued a release (`WorkflowEventReceived { queuedAt }`) names, when it is
 * loaded: the timeline holds the history from its first revision on, in order, so it is found by
 * its revision's offset (a binary search when revisions are missing).
 */
function queuedOf(events: HistoryEvent[], e: HistoryEvent): HistoryEvent | undefined {
  const at = e.type === 'WorkflowEventReceived' ? e.data?.queuedAt : undefined;
  if (typeof at !== 'number' || events.length === 0) return undefined;
  const guess = events[at - events[0].revision];
  if (guess?.revision === at) return guess.type === 'WorkflowEventQueued' ? guess : undefined;
  let lo = 0;
  let hi = events.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (events[mid].revision === at) return events[mid].type === 'WorkflowEventQueued' ? events[mid] : undefined;
    if (events[mid].revision < at) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/**
 * The timeline in its own scroll box, windowed: only the events in and near its view are in the
 * page (a history of 40,000 events rendered whole took seconds and stayed heavy). Which events are
 * expanded is kept here, by revision, so an expanded event scrolled away and back is still open.
 * The box is focusable, so the keyboard scrolls it; the rows say their place in the whole list.
 */
const Timeline = memo(function Timeline({ events }: { events: HistoryEvent[] }) {
  const [expanded, setExpanded] = useState<string[]>([]);
  const list = useWindowedList(events.length);
  return (
    <div
      ref={list.scrollRef}
      onScroll={list.onScroll}
      tabIndex={0}
      role="region"
      aria-label={`Timeline: ${events.length.toLocaleString('en')} events`}
      data-testid="timeline"
      // (no scroll anchoring: the browser would chase rows that come and go as it scrolls)
      style={{ maxHeight: '70vh', overflowY: 'auto', overflowAnchor: 'none', border: events.length ? '1px solid var(--mantine-color-default-border)' : undefined, borderRadius: 'var(--mantine-radius-sm)' }}
    >
      <div ref={list.rowsRef} role="list" aria-label="History events" style={{ paddingTop: list.before, paddingBottom: list.after }}>
        <Accordion multiple value={expanded} onChange={setExpanded} chevronPosition="left">
          {events.slice(list.start, list.end).map((e, i) => (
            <TimelineRow key={e.revision} e={e} index={list.start + i} count={events.length} queued={queuedOf(events, e)} />
          ))}
        </Accordion>
      </div>
    </div>
  );
});

export function WorkflowPage({ id }: { id: string }) {
  const { scope, canControl } = useSession();
  const { data, fresh, error, reload } = usePolling(() => gql(WORKFLOW, { ...scope, id, children: { ...scope, parentId: id } }), [id, scope.appId, scope.environment]);
  const timeline = useHistory('workflow', scope, id, data?.workflow?.historyLength);
  const tasks = useMemo(() => tasksOf(timeline.events), [timeline.events]);
  const action = useAction(reload);
  const [sending, setSending] = useState(false);
  const [eventName, setEventName] = useState('');
  const [eventData, setEventData] = useState('[]');

  const w = data?.workflow;
  // Nothing of another workflow (the one shown before, under this id: its buttons would act on
  // this one); a failed refresh is shown above the page, which stays as it was.
  if (!data || !fresh) return error ? <Alert color="red">{error}</Alert> : <Text>Loading…</Text>;
  if (!w) return <Alert color="yellow">No workflow {id} in {scope.appId} / {scope.environment}.</Alert>;

  const selector = { ...scope, selector: { id } };
  const mutate = (field: string, input: string, extra: Record<string, unknown> = {}) =>
    action.run(() => gql(`mutation($input: ${input}!) { ${field}(input: $input) { status } }`, { input: { ...selector, ...extra } }));

  return (
    <Stack>
      {error && (
        <Alert color="red" data-testid="refresh-error">
          {error}
        </Alert>
      )}
      <Group justify="space-between">
        <Group>
          <Title order={3}>{w.version ?? w.name}</Title>
          <StateBadge state={w.state} />
          {w.tag && <Badge variant="outline">{w.tag}</Badge>}
        </Group>
        {canControl && (
          <Group gap="xs" data-testid="workflow-actions">
            {w.state === 'RUNNING' && (
              <Button size="xs" variant="light" onClick={() => mutate('pauseWorkflows', 'PauseWorkflowsInput')}>
                Pause
              </Button>
            )}
            {w.state === 'PAUSED' && (
              <Button size="xs" variant="light" onClick={() => mutate('resumeWorkflows', 'ResumeWorkflowsInput')}>
                Resume
              </Button>
            )}
            {(w.state === 'RUNNING' || w.state === 'PAUSED') && (
              <>
                <Button size="xs" variant="light" onClick={() => setSending(true)}>
                  Send event
                </Button>
                <ConfirmButton label="Terminate" question="Terminate this workflow, and the child workflows it awaits that still run? It cannot be resumed." onConfirm={() => mutate('terminateWorkflows', 'TerminateWorkflowsInput')} />
              </>
            )}
            {w.state === 'FAILED' && (
              <Button size="xs" color="orange" onClick={() => mutate('retryWorkflows', 'RetryWorkflowsInput')}>
                Retry
              </Button>
            )}
          </Group>
        )}
      </Group>
      {action.error && <Alert color="red">{action.error}</Alert>}
      <SimpleGrid cols={4}>
        <Text size="sm">
          <b>Id</b> <Code>{w.id}</Code>
        </Text>
        <Text size="sm">
          <b>Dispatched</b> {time(w.createdAt)}
        </Text>
        <Text size="sm">
          <b>Parent</b> {w.parentId ? <Anchor href={`#/workflows/${w.parentId}`}>{shortId(w.parentId)}</Anchor> : '—'}
        </Text>
        <Text size="sm">
          <b>Schedule</b> {w.scheduleId ? shortId(w.scheduleId) : '—'}
        </Text>
      </SimpleGrid>
      <SimpleGrid cols={2}>
        <JsonBlock label="Input" value={w.input} />
        {w.state === 'FAILED' ? (
          <Stack gap={4}>
            <Text size="sm" fw={600}>
              Error
            </Text>
            <Alert color="red" data-testid="workflow-error">
              {w.error}
            </Alert>
          </Stack>
        ) : (
          <JsonBlock label="Output" value={w.output} />
        )}
      </SimpleGrid>

      {data.workflows.nodes.length > 0 && (
        <Card withBorder>
          <Title order={5} mb="xs">
            Children ({atLeast(data.workflows.totalCount, data.workflows.totalCountCapped)})
          </Title>
          {data.workflows.nodes.length < data.workflows.totalCount && (
            <Text size="sm" c="dimmed" data-testid="children-partial">
              The first {data.workflows.nodes.length}, oldest first.
            </Text>
          )}
          <Table>
            <Table.Tbody>
              {data.workflows.nodes.map((c: any) => (
                <Table.Tr key={c.id}>
                  <Table.Td>
                    <Anchor href={`#/workflows/${c.id}`}>{shortId(c.id)}</Anchor>
                  </Table.Td>
                  <Table.Td>{c.name}</Table.Td>
                  <Table.Td>{c.tag}</Table.Td>
                  <Table.Td>
                    <StateBadge state={c.state} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Card>
      )}

      <Card withBorder>
        <Title order={5} mb="xs">
          Tasks
        </Title>
        {!timeline.complete && !timeline.loading && (
          <Text size="sm" c="dimmed" mb="xs" data-testid="tasks-partial">
            As read from the first {timeline.events.length.toLocaleString('en')} events of the history: load the rest of the timeline below to see every task.
          </Text>
        )}
        <TasksTable tasks={tasks} />
      </Card>

      <Card withBorder>
        <Group justify="space-between" mb="xs">
          <Title order={5}>Timeline</Title>
          <HistoryProgress history={timeline} />
        </Group>
        {timeline.error && (
          <Alert color="red" mb="xs" data-testid="history-error">
            {timeline.error}
          </Alert>
        )}
        <Timeline key={id} events={timeline.events} />
        {!timeline.complete && !timeline.loading && (
          <Group mt="xs">
            <HistoryProgress history={timeline} testId="history-bottom" />
          </Group>
        )}
      </Card>

      <Modal opened={sending} onClose={() => setSending(false)} title="Send an event">
        <Stack>
          <TextInput label="Event name" value={eventName} onChange={(e) => setEventName(e.currentTarget.value)} />
          <Textarea label="Data (a JSON array)" value={eventData} onChange={(e) => setEventData(e.currentTarget.value)} autosize minRows={2} />
          <Button
            disabled={!eventName}
            onClick={async () => {
              await action.run(() => gql('mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) { status } }', { input: { ...selector, name: eventName, data: eventData } }));
              setSending(false);
            }}
          >
            Send
          </Button>
        </Stack>
      </Modal>
    </Stack>
  );
}
