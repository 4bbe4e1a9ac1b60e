import { Alert, Anchor, Badge, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { gql } from '../api';
import { CursorListButtons, atLeast, time, useCursorList, useSession } from '../shared';

const ACTIONS = ['WorkflowDispatched', 'WorkflowPaused', 'WorkflowResumed', 'WorkflowTerminated', 'WorkflowEventReceived', 'WorkflowEventQueued', 'WorkflowRetried', 'TaskDispatched', 'TaskRetried', 'ScheduleCreated', 'SchedulePaused', 'ScheduleResumed', 'ScheduleTriggered', 'ScheduleDeleted'];
const AUDIT = `query($filter: AuditFilterInput!, $first: Int, $after: String) { auditLog(filter: $filter, first: $first, after: $after) { totalCount totalCountCapped pageInfo { hasNextPage endCursor } nodes { id at actor actorLabel action streamId name } } }`;
const PAGE = 100;

export function AuditPage() {
  const { scope } = useSession();
  const [actor, setActor] = useState('');
  const [action, setAction] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const filter = { ...scope, ...(actor ? { actor } : {}), ...(action ? { action } : {}), ...(search ? { search } : {}) };
  const list = useCursorList(
    () => gql(AUDIT, { filter, first: PAGE }),
    (data: any) => data.auditLog,
    async (after) => (await gql(AUDIT, { filter, first: PAGE, after })).auditLog,
    JSON.stringify(filter),
    5000,
  );
  const { data, error } = list;
  return (
    <Stack>
      <Title order={3}>Audit</Title>
      <Text size="sm" c="dimmed">
        Every API action on {scope.appId} / {scope.environment}, newest first, from the events' metadata.
      </Text>
      <Group align="flex-end">
        <TextInput label="Actor (token id)" value={actor} onChange={(e) => setActor(e.currentTarget.value)} w={320} />
        <Select label="Action" data={ACTIONS} value={action} onChange={setAction} clearable placeholder="any" />
        <TextInput label="Search" value={search} onChange={(e) => setSearch(e.currentTarget.value)} />
      </Group>
      {error && <Alert color="red">{error}</Alert>}
      <Text size="sm" c="dimmed">
        {data ? `${atLeast(data.auditLog.totalCount, data.auditLog.totalCountCapped)} actions` : 'Loading…'}
      </Text>
      <Table striped data-testid="audit-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>When</Table.Th>
            <Table.Th>Actor</Table.Th>
            <Table.Th>Action</Table.Th>
            <Table.Th>On</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.nodes.map((e: any) => (
            <Table.Tr key={e.id}>
              <Table.Td>{time(e.at)}</Table.Td>
              <Table.Td>
                <Anchor size="sm" onClick={() => setActor(e.actor)}>
                  {e.actorLabel ?? e.actor}
                </Anchor>
              </Table.Td>
              <Table.Td>
                <Badge variant="light">{e.action}</Badge>
              </Table.Td>
              <Table.Td>
                {e.streamId.startsWith('workflow-') ? <Anchor href={`#/workflows/${e.streamId.slice(9)}`}>{e.name ?? e.streamId}</Anchor> : <Text size="sm">{e.name ?? e.streamId}</Text>}
                <Text size="xs" c="dimmed" ff="monospace">
                  {e.streamId}
                </Text>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <CursorListButtons list={list} moreLabel="Load older actions" />
    </Stack>
  );
}
