import { Alert, Anchor, Badge, Button, Card, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { gql } from '../api';
import { CursorListButtons, StateBadge, atLeast, shortId, time, useCursorList, usePolling, useSession } from '../shared';

const STATES = ['RUNNING', 'PAUSED', 'COMPLETED', 'FAILED', 'TERMINATED'];
const RANGES: Record<string, number | null> = { 'Last 15 minutes': 15, 'Last hour': 60, 'Last 24 hours': 1440, 'Last 7 days': 10080, 'Any time': null };

const LIST = `query($filter: WorkflowFilterInput!, $first: Int, $after: String) {
  workflows(filter: $filter, first: $first, after: $after, newestFirst: true) { totalCount totalCountCapped pageInfo { endCursor hasNextPage } nodes { id name version tag state createdAt updatedAt error } }
  workflowCounts(filter: $filter) { state count capped }
}`;
const OLDER = `query($filter: WorkflowFilterInput!, $first: Int, $after: String) {
  workflows(filter: $filter, first: $first, after: $after, newestFirst: true) { pageInfo { endCursor hasNextPage } nodes { id name version tag state createdAt updatedAt error } }
}`;
const PAGE = 50;
const ACTIVITY = `query($appId: String!, $environment: String!) { workflowActivity(appId: $appId, environment: $environment, minutes: 30) { at started completed failed } }`;

export function WorkflowsPage() {
  const { scope, navigate } = useSession();
  const [name, setName] = useState('');
  const [tag, setTag] = useState('');
  const [state, setState] = useState<string | null>(null);
  const [range, setRange] = useState('Any time');
  const [search, setSearch] = useState('');

  const minutes = RANGES[range];
  const filter = {
    ...scope,
    ...(name ? { name } : {}),
    ...(tag ? { tag } : {}),
    ...(state ? { state } : {}),
    ...(minutes ? { createdAfter: new Date(Date.now() - minutes * 60_000).toISOString() } : {}),
  };
  const list = useCursorList(
    () => gql(LIST, { filter, first: PAGE }),
    (data: any) => data.workflows,
    async (after) => (await gql(OLDER, { filter, first: PAGE, after })).workflows,
    JSON.stringify({ ...filter, createdAfter: range }),
  );
  const { data, error } = list;
  const activity = usePolling(() => gql(ACTIVITY, scope), [scope.appId, scope.environment], 5000);

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={3}>Workflows</Title>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (search.trim()) navigate(`workflows/${search.trim()}`);
          }}
        >
          <TextInput aria-label="Find by id" placeholder="Find a workflow by id…" value={search} onChange={(e) => setSearch(e.currentTarget.value)} w={360} />
        </form>
      </Group>
      <Group gap="xs" data-testid="state-counts">
        {(data?.workflowCounts ?? []).map((c: { state: string; count: number; capped: boolean }) => (
          <Button key={c.state} size="xs" variant={state === c.state ? 'filled' : 'light'} onClick={() => setState(state === c.state ? null : c.state)}>
            {c.state} <Badge ml={6} size="sm" variant="white">{atLeast(c.count, c.capped)}</Badge>
          </Button>
        ))}
      </Group>
      <Group align="flex-end">
        <TextInput label="Name" placeholder="any" value={name} onChange={(e) => setName(e.currentTarget.value)} />
        <TextInput label="Tag" placeholder="any" value={tag} onChange={(e) => setTag(e.currentTarget.value)} />
        <Select label="State" placeholder="any" data={STATES} value={state} onChange={setState} clearable />
        <Select label="Dispatched" data={Object.keys(RANGES)} value={range} onChange={(v) => v && setRange(v)} allowDeselect={false} />
      </Group>
      {error && <Alert color="red">{error}</Alert>}
      <Card withBorder p="xs">
        <Text size="sm" fw={600} mb={4}>
          Per minute, last 30 minutes
        </Text>
        <ResponsiveContainer width="100%" height={120}>
          <BarChart data={(activity.data?.workflowActivity ?? []).map((b: any) => ({ ...b, minute: new Date(b.at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', hour12: false }) }))}>
            <CartesianGrid strokeDasharray="3 3" vertical={false} />
            <XAxis dataKey="minute" fontSize={10} />
            <YAxis allowDecimals={false} fontSize={10} width={30} />
            <Tooltip />
            <Legend wrapperStyle={{ fontSize: 11 }} />
            <Bar dataKey="started" fill="#228be6" isAnimationActive={false} />
            <Bar dataKey="completed" fill="#40c057" isAnimationActive={false} />
            <Bar dataKey="failed" fill="#fa5252" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </Card>
      <Text size="sm" c="dimmed">
        {data ? `${atLeast(data.workflows.totalCount, data.workflows.totalCountCapped)} workflows, newest first` : 'Loading…'}
      </Text>
      <Table striped highlightOnHover data-testid="workflows-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Id</Table.Th>
            <Table.Th>Name</Table.Th>
            <Table.Th>Tag</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Dispatched</Table.Th>
            <Table.Th>Updated</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.nodes.map((w: any) => (
            <Table.Tr key={w.id}>
              <Table.Td>
                <Anchor href={`#/workflows/${w.id}`} ff="monospace" size="sm">
                  {shortId(w.id)}
                </Anchor>
              </Table.Td>
              <Table.Td>{w.version ?? w.name}</Table.Td>
              <Table.Td>{w.tag ?? ''}</Table.Td>
              <Table.Td>
                <StateBadge state={w.state} />
              </Table.Td>
              <Table.Td>{time(w.createdAt)}</Table.Td>
              <Table.Td>{time(w.updatedAt)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <CursorListButtons list={list} moreLabel="Load more" />
    </Stack>
  );
}
