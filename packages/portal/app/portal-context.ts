import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ApiClient } from './api-client.js';
import type { PortalPermission, PortalSessionView } from './api-types.js';

export interface PortalContextValue {
  api: ApiClient;
  session: PortalSessionView;
  /** The host's name, or a neutral one. */
  brandName: string;
}

export const PortalContext = createContext<PortalContextValue | null>(null);

export function usePortal(): PortalContextValue & { can: (permission: PortalPermission) => boolean } {
  const value = useContext(PortalContext);
  if (!value) throw new Error('usePortal outside the portal');
  return { ...value, can: (permission) => value.session.permissions.includes(permission) };
}
