"""placeholder"""

AuditReport = None


def audit(*a, **k):
    raise NotImplementedError
