// Pending approvals on every page: the nav badge, the tab title count and browser notifications.
'use strict';
