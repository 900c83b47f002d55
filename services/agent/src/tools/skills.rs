//! `skills_list`, `skill_view` and `skill_manage`: the agent's skills, over
//! one shared [`SkillManager`] so a skill written in a session can be viewed
//! in it (the level-0 index in the system prompt stays as it was).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use talaria_kernel::{ToolContext, ToolSpec};
use talaria_skills::{
    SKILL_MANAGE, SKILL_MANAGE_DESCRIPTION, SKILL_VIEW, SKILL_VIEW_DESCRIPTION, SKILLS_LIST,
    SKILLS_LIST_DESCRIPTION, SkillManager, handle_skill_manage, handle_skill_view,
    handle_skills_list, skill_manage_schema, skill_view_schema, skills_list_schema,
};
use talaria_tools::ToolFlags;

use super::NativeTool;

/// Checks text the agent writes into a skill; `Err` says which rule fired.
pub type ScanFn = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The threat scanner as the skill tools use it: `Err` names the rule.
pub fn threat_scan() -> ScanFn {
    Arc::new(|text: &str| match talaria_memory::Scanner::builtin() {
        Ok(scanner) => match scanner.scan_in(text, talaria_memory::Scope::Document) {
            Some(threat) => Err(format!(
                "blocked: the text trips rule '{}' ({}): {}",
                threat.rule_id,
                threat.category.as_str(),
                threat.description
            )),
            None => Ok(()),
        },
        // Without a scanner nothing unchecked is written.
        Err(error) => Err(format!("the threat scanner is unavailable: {error}")),
    })
}

/// The three skill tools over one manager.
pub fn skill_tools(manager: Arc<Mutex<SkillManager>>, scan: ScanFn) -> Vec<Arc<dyn NativeTool>> {
    vec![
        Arc::new(SkillTool {
            kind: Kind::List,
            manager: manager.clone(),
            scan: scan.clone(),
        }),
        Arc::new(SkillTool {
            kind: Kind::View,
            manager: manager.clone(),
            scan: scan.clone(),
        }),
        Arc::new(SkillTool {
            kind: Kind::Manage,
            manager,
            scan,
        }),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    List,
    View,
    Manage,
}

struct SkillTool {
    kind: Kind,
    manager: Arc<Mutex<SkillManager>>,
    scan: ScanFn,
}

#[async_trait]
impl NativeTool for SkillTool {
    fn spec(&self) -> ToolSpec {
        let (name, description, parameters) = match self.kind {
            Kind::List => (SKILLS_LIST, SKILLS_LIST_DESCRIPTION, skills_list_schema()),
            Kind::View => (SKILL_VIEW, SKILL_VIEW_DESCRIPTION, skill_view_schema()),
            Kind::Manage => (
                SKILL_MANAGE,
                SKILL_MANAGE_DESCRIPTION,
                skill_manage_schema(),
            ),
        };
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
            refunds_iteration: false,
        }
    }

    fn toolset(&self) -> &'static str {
        "skills"
    }

    fn flags(&self) -> ToolFlags {
        match self.kind {
            Kind::List | Kind::View => ToolFlags::read_only(),
            Kind::Manage => ToolFlags::default(),
        }
    }

    async fn call(&self, arguments: &Value, _context: &ToolContext) -> Result<Value, String> {
        let mut manager = self
            .manager
            .lock()
            .map_err(|_| "the skills store is unavailable after an earlier failure".to_string())?;
        match self.kind {
            Kind::List => handle_skills_list(manager.index(), arguments),
            Kind::View => handle_skill_view(manager.index(), arguments),
            Kind::Manage => {
                let scan = &*self.scan;
                handle_skill_manage(&mut manager, arguments, &|text| scan(text))
            }
        }
    }
}
